#!/usr/bin/env node
//! Builds a JavaScript plugin into a component: bundles the entry module with the SDK (rolldown),
//! then componentizes it (componentize-js) against wasmgate's WIT. `wasmgate plugin build` runs it.
//!
//!   node build.mjs <entry.js> --world router-plugin --wit <wit dir> --toolchain <dir> -o <out.wasm>
//!
//! `--toolchain` is a directory where `@bytecodealliance/componentize-js` and `rolldown` are
//! installed (`npm install` there).

import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const args = process.argv.slice(2);
const flag = (name) => {
  const i = args.indexOf(name);
  if (i === -1 || i + 1 >= args.length) throw new Error(`missing ${name}`);
  const value = args[i + 1];
  args.splice(i, 2);
  return value;
};

async function main() {
  const world = flag('--world');
  const wit = resolve(flag('--wit'));
  const toolchain = resolve(flag('--toolchain'));
  const out = resolve(flag('-o'));
  const [entry] = args;
  if (!entry) throw new Error('usage: build.mjs <entry.js> --world <world> --wit <dir> --toolchain <dir> -o <out.wasm>');

  const load = async (name) => {
    // The packages are ES modules with an `import` export only, which require.resolve ignores.
    const dir = join(toolchain, 'node_modules', name);
    const manifest = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8'));
    const exports = manifest.exports?.['.'] ?? manifest.exports;
    const main = exports?.import?.default ?? exports?.import ?? exports?.default ?? manifest.main;
    return import(pathToFileURL(join(dir, typeof main === 'string' ? main : 'index.js')).href);
  };
  const { rolldown } = await load('rolldown');
  const { componentize } = await load('@bytecodealliance/componentize-js');

  const sdk = dirname(fileURLToPath(import.meta.url));
  const alias = {};
  for (const file of await readdir(sdk)) {
    if (file.endsWith('.js') && !file.startsWith('_')) alias[`wasmgate-plugin/${file.slice(0, -3)}`] = join(sdk, file);
  }
  const work = await mkdtemp(join(tmpdir(), 'wasmgate-js-'));
  try {
    const bundled = join(work, 'plugin.js');
    const bundle = await rolldown({
      input: resolve(entry),
      external: [/^wasmgate:/],
      platform: 'neutral',
      resolve: { alias },
      logLevel: 'warn',
    });
    await bundle.write({ file: bundled, format: 'esm' });
    await bundle.close();
    const { component } = await componentize({
      sourcePath: bundled,
      witPath: wit,
      worldName: world,
      // Plugins get no network: wasmgate's host does the I/O, and does not link wasi:http.
      disableFeatures: ['http', 'fetch-event'],
    });
    await writeFile(out, component);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(`wasmgate-plugin build: ${err.message ?? err}`);
  process.exit(1);
});
