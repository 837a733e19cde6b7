// The official MCP TypeScript SDK (`@modelcontextprotocol/sdk`, pinned by scripts/sdk-clients.sh)
// as a client of the gateway's `/mcp`, for tests/mcp_gateway.rs. The same steps as client.py:
// node client.mjs --url URL --key KEY --steps JSON; prints one JSON array of outcomes.
// The SDK is loaded from $NODE_PATH (target/sdk-clients/js/node_modules).

import { createRequire } from "node:module";
import path from "node:path";
import { parseArgs } from "node:util";

const require = createRequire(path.join(process.env.NODE_PATH, "noop.js"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");

const { values } = parseArgs({
  options: { url: { type: "string" }, key: { type: "string" }, steps: { type: "string" } },
});

const transport = new StreamableHTTPClientTransport(new URL(values.url), {
  requestInit: { headers: { Authorization: `Bearer ${values.key}` } },
});
const client = new Client({ name: "wasmgate-test", version: "1.0.0" });
await client.connect(transport);

const texts = (result) => result.content.filter((b) => b.type === "text").map((b) => b.text);
const outcomes = [];
for (const step of JSON.parse(values.steps)) {
  try {
    if (step[0] === "tools") {
      let names = [], pages = 0, cursor;
      do {
        const page = await client.listTools(cursor ? { cursor } : undefined);
        pages += 1;
        names = names.concat(page.tools.map((t) => t.name));
        cursor = page.nextCursor;
      } while (cursor);
      outcomes.push({ names, pages });
    } else if (step[0] === "call") {
      const result = await client.callTool({ name: step[1], arguments: step[2] });
      outcomes.push({ texts: texts(result), is_error: Boolean(result.isError) });
    } else {
      throw new Error(`unknown step ${step[0]}`);
    }
  } catch (e) {
    outcomes.push({ error: { code: e.code ?? null, message: String(e.message) } });
  }
}
await client.close();
console.log(JSON.stringify(outcomes));
