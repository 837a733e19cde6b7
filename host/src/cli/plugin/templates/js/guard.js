// {{name}}: a wasmgate guard. Refuses requests that mention any of `words`, and stops answers
// that do, holding back only as much text as the longest word could still be completing.
import { o } from 'wasmgate-plugin/options';
import { allow, ConfigError, defineGuard, refuse, release, requestOrigin, requestTexts, stop, text } from 'wasmgate-plugin/guard';

const mentions = (options, value) => {
  const lower = value.toLowerCase();
  return options.words.some((word) => lower.includes(word.toLowerCase()));
};

// Lengths in Unicode scalar values, as the host counts held text.
const longest = (words) => Math.max(...words.map((w) => [...w].length));

export const guard = defineGuard({
  options: o.object({ words: o.list(o.string()) }),
  validate(options) {
    if (options.words.length === 0) throw new ConfigError('name at least one word', 'words');
    return longest(options.words);
  },
  checkRequest(options, request) {
    const texts = requestTexts(request);
    const found = texts.findIndex((t) => mentions(options, t));
    if (found < 0) return allow();
    // A body of another route (embeddings, a pass-through...) says where each text stood.
    const origin = requestOrigin(request);
    const where = origin ? ` (${origin.route}, at ${origin.at[found] ?? '?'})` : '';
    return refuse(`this topic is not allowed here${where}`, 400, { word: 1 });
  },
  // One answer: the text of choice 0 not yet released (short of the longest word).
  answer(options) {
    const hold = longest(options.words) - 1;
    let held = [];
    return {
      push(events) {
        const out = [];
        for (const event of events) {
          if (event.tag === 'text') {
            held.push(...event.val.text);
            if (mentions(options, held.join(''))) return stop('this topic is not allowed here', { word: 1 });
            const cut = Math.max(0, held.length - hold);
            if (cut) out.push(text(held.splice(0, cut).join(''), event.val.choice));
          } else if (event.tag === 'stop') {
            if (held.length) out.push(text(held.splice(0).join(''), event.val.choice));
            out.push(event);
          } else {
            out.push(event);
          }
        }
        return release(out, held.length);
      },
      finish() {
        const rest = held.splice(0).join('');
        return release(rest ? [text(rest)] : []);
      },
    };
  },
});
