//! Unit tests of a plugin under node: `node --import <sdk>/testing/register.js --test`. Maps the
//! host's `wasmgate:plugin/*` imports to stand-ins (see `host.js` here): `log` keeps its lines
//! in `logged`, `countTokens` estimates a token per four bytes, counters live in a Map.

import { register } from 'node:module';

register('./hooks.js', import.meta.url);
