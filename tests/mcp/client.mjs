// A client of `cairn mcp` built on the official MCP TypeScript SDK (its `Client` and
// `StdioClientTransport`), driven by the Rust tests in tests/cli/mcp_node.rs.
//
// Usage: node client.mjs SDK_DIR < request.json
//   SDK_DIR       where `cargo xtask mcp-sdk` installed the pinned SDK (<target>/mcp-sdk)
//   request.json  {"command", "args", "env", "calls": [{"tool", "args"}]}
//
// Spawns the server, initializes, lists the tools, makes the calls in order, and prints one JSON
// object: {"server", "instructions", "tools", "results": [{"tool", "isError", "content"} or
// {"tool", "thrown"}]}. A call the SDK rejects (a protocol error, not a tool error) is recorded as
// `thrown` and the next call still runs, so the test sees every answer.
import { createRequire } from "node:module";
import { join } from "node:path";

const sdkDir = process.argv[2];
if (!sdkDir) {
  console.error("usage: node client.mjs SDK_DIR < request.json");
  process.exit(2);
}
// The SDK is installed under the target directory, not beside this script, so it is loaded
// from there by path (an ES module's bare imports ignore NODE_PATH).
const require = createRequire(join(sdkDir, "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const request = JSON.parse(Buffer.concat(chunks).toString("utf8"));

const transport = new StdioClientTransport({
  command: request.command,
  args: request.args ?? [],
  env: request.env ?? {},
  stderr: "inherit",
});
const client = new Client({ name: "cairn-test-node-client", version: "1.0.0" });
await client.connect(transport);

const tools = (await client.listTools()).tools;
const results = [];
for (const call of request.calls ?? []) {
  try {
    const result = await client.callTool({ name: call.tool, arguments: call.args ?? {} });
    results.push({ tool: call.tool, isError: result.isError === true, content: result.content });
  } catch (error) {
    results.push({ tool: call.tool, thrown: String(error?.message ?? error) });
  }
}

const out = {
  server: client.getServerVersion(),
  instructions: client.getInstructions(),
  tools,
  results,
};
await client.close();
process.stdout.write(JSON.stringify(out) + "\n");
