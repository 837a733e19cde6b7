//! The resolve hook behind `register.js`: `wasmgate:plugin/<interface>@<version>` → stand-ins,
//! and `wasmgate-plugin/<module>` → this SDK (as the build's bundler resolves it), so a plugin's
//! tests need no `node_modules`.

const STANDINS = new URL('./host.js', import.meta.url).href;
const SDK = new URL('../', import.meta.url);

export async function resolve(specifier, context, next) {
  if (specifier.startsWith('wasmgate:plugin/')) return { url: STANDINS, shortCircuit: true };
  const sdk = /^wasmgate-plugin\/([a-z_]+)$/.exec(specifier);
  if (sdk) {
    const file = sdk[1] === 'testing' ? 'testing/host.js' : `${sdk[1]}.js`;
    return { url: new URL(file, SDK).href, shortCircuit: true };
  }
  return next(specifier, context);
}
