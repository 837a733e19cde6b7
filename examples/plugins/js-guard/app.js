// js-guard: keeps an organisation's ticket keys (`OPS-1234` for a project `OPS`) away from the
// model and out of its answers. A request's messages have them replaced with `[ticket]` before
// it leaves (a rewrite, not a refusal: the question still gets answered); an answer has them
// masked too, streamed answers included. A key never spans white space, so each choice holds
// back only the word still being written: at most WORD characters, and HOLD over all choices,
// past which the held text is released masked as it stands.
import { o } from 'wasmgate-plugin/options';
import { allow, charCount, ConfigError, defineGuard, release, rewrite, text } from 'wasmgate-plugin/guard';

const WORD = 64;
const HOLD = 4 * WORD;
const MASK = '[ticket]';

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const keys = (options) => new RegExp(`\\b(?:${options.projects.map(escape).join('|')})-\\d+\\b`, 'g');

// `value` masked, and how many keys it held.
const masked = (pattern, value) => {
  let found = 0;
  const out = value.replace(pattern, () => {
    found += 1;
    return MASK;
  });
  return [out, found];
};

export const guard = defineGuard({
  options: o.object({ projects: o.list(o.string()) }),
  validate(options) {
    if (options.projects.length === 0) throw new ConfigError('name at least one project', 'projects');
    return HOLD;
  },
  checkRequest(options, request) {
    const pattern = keys(options);
    const body = JSON.parse(request);
    let found = 0;
    const mask = (value) => {
      const [out, n] = masked(pattern, value);
      found += n;
      return out;
    };
    for (const message of body.messages ?? []) {
      if (typeof message.content === 'string') message.content = mask(message.content);
      else if (Array.isArray(message.content)) {
        for (const part of message.content) if (typeof part?.text === 'string') part.text = mask(part.text);
      }
    }
    return found ? rewrite(JSON.stringify(body), { ticket: found }) : allow();
  },
  answer(options) {
    const pattern = keys(options);
    const held = new Map();
    let found = 0;
    const take = (out, choice, upto) => {
      const word = held.get(choice) ?? '';
      const [ready, rest] = [word.slice(0, upto), word.slice(upto)];
      held.set(choice, rest);
      if (ready) {
        const [out2, n] = masked(pattern, ready);
        found += n;
        out.push(text(out2, choice));
      }
    };
    const heldChars = () => [...held.values()].reduce((n, w) => n + charCount(w), 0);
    const verdict = (out) => {
      const findings = found ? { ticket: found } : undefined;
      found = 0;
      return release(out, heldChars(), findings);
    };
    return {
      push(events) {
        const out = [];
        for (const event of events) {
          if (event.tag === 'text') {
            const { choice } = event.val;
            const word = (held.get(choice) ?? '') + event.val.text;
            held.set(choice, word);
            const space = Math.max(word.lastIndexOf(' '), word.lastIndexOf('\n'), word.lastIndexOf('\t'));
            let upto = space + 1;
            if (charCount(word.slice(upto)) > WORD) upto = word.length;
            take(out, choice, upto);
            if (heldChars() > HOLD) for (const [c, w] of held) take(out, c, w.length);
          } else if (event.tag === 'stop') {
            take(out, event.val.choice, (held.get(event.val.choice) ?? '').length);
            out.push(event);
          } else {
            out.push(event);
          }
        }
        return verdict(out);
      },
      finish() {
        const out = [];
        for (const [c, w] of held) take(out, c, w.length);
        return verdict(out);
      },
    };
  },
});
