// The official MCP TypeScript SDK's client against rigfit, over one transport:
//   node sdk_client.cjs --http URL --rest BASE
//   node sdk_client.cjs --stdio BIN ARG... --rest BASE
// It lists the tools (following nextCursor; they fit one page), checks each description's
// example against its inputSchema, calls every tool, validates each
// structuredContent against the tool's outputSchema with a JSON Schema 2020-12 validator,
// checks that it equals the REST answer of the daemon at BASE for the same input, and
// checks bad arguments (a tool error naming the field) and an unknown tool (-32602).
// Exits 1 on the first failure, with what differed.
'use strict';
const assert = require('node:assert/strict');
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');
const Ajv2020 = require('ajv/dist/2020').default;
const addFormats = require('ajv-formats').default;

const args = process.argv.slice(2);
const restAt = args.indexOf('--rest');
const rest = args[restAt + 1];
const mode = args[0];

// Every tool, the REST call that answers the same question, and the arguments.
const cases = [
  { tool: 'detect_hardware', method: 'GET', path: '/api/hardware', args: {} },
  { tool: 'estimate', method: 'POST', path: '/api/estimate',
    args: { model: { id: 'llama-3.1-8b' }, quant: 'Q4_K_M', n_ctx: 8192, hardware_profile: 'rtx-4090' } },
  { tool: 'recommend_models', method: 'POST', path: '/api/recommend',
    args: { task: 'text-generation', hardware_profile: 'rtx-4090', limit: 5 } },
  { tool: 'write_runtime_config', method: 'POST', path: '/api/config',
    args: { model: { id: 'qwen2.5-7b' }, use_case: 'general', hardware_profile: 'rtx-4090' } },
  { tool: 'validate_config', method: 'POST', path: '/api/validate',
    args: { backend: 'cuda', model: { id: 'llama-3.1-8b' },
            settings: { n_gpu_layers: 99, n_batch: 2048, n_ubatch: 512, n_ctx: 131072 },
            metadata: { precision: 'Q4_K_M' }, hardware_profile: 'rtx-3060-12gb' } },
  { tool: 'plan_finetuning', method: 'POST', path: '/api/finetune/detect',
    args: { task: 'text-generation', hardware_profile: 'rtx-4090' } },
  { tool: 'list_models', method: 'GET', path: '/api/models?source=catalog', args: { source: 'catalog' } },
  { tool: 'lookup_model', method: 'GET', path: null, args: { id: 'llama-3.1-8b' } },
];

// Fields of a scan that differ between two scans of the same machine.
function unscanned(o) {
  if (o && typeof o === 'object' && 'scanned_at' in o) {
    const c = { ...o };
    delete c.scanned_at;
    delete c.scan_duration_ms;
    return c;
  }
  return o;
}

async function restAnswer(method, path, body) {
  const r = await fetch(rest + path, {
    method,
    headers: body ? { 'Content-Type': 'application/json' } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  assert.equal(r.status, 200, `${method} ${path}: ${r.status}`);
  return r.json();
}

// A stored profile without the times its row was written.
function unstamped(p) {
  const { created_at: _c, updated_at: _u, ...rest } = p;
  return rest;
}

async function main() {
  let transport;
  if (mode === '--http') {
    transport = new StreamableHTTPClientTransport(new URL(args[1]));
  } else if (mode === '--stdio') {
    transport = new StdioClientTransport({ command: args[1], args: args.slice(2, restAt), stderr: 'inherit' });
  } else {
    throw new Error('usage: sdk_client.cjs --http URL|--stdio BIN ARG... --rest BASE');
  }
  const client = new Client({ name: 'rigfit-test', version: '1.0.0' });
  await client.connect(transport);
  const version = client.getServerVersion();
  assert.equal(version.name, 'rigfit');

  const tools = [];
  let cursor;
  let pages = 0;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    tools.push(...page.tools);
    cursor = page.nextCursor;
    pages++;
  } while (cursor && pages < 10);
  assert.deepEqual(tools.map((t) => t.name).sort(), cases.map((c) => c.tool).sort());

  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  // Every tool in one page, and each description's example valid under its inputSchema.
  assert.equal(pages, 1, `tools/list took ${pages} pages`);
  for (const t of tools) {
    const m = /Example: (\{.*\})/.exec(t.description);
    assert.ok(m, `${t.name}: no example in its description`);
    const validEx = ajv.compile(t.inputSchema);
    assert.ok(validEx(JSON.parse(m[1])),
      `${t.name}: its description's example breaks inputSchema: ${ajv.errorsText(validEx.errors)}`);
  }
  for (const c of cases) {
    const t = tools.find((x) => x.name === c.tool);
    assert.equal(t.annotations.readOnlyHint, true, `${c.tool}: readOnlyHint`);
    assert.equal(t.inputSchema.type, 'object');
    const validIn = ajv.compile(t.inputSchema);
    assert.ok(validIn(c.args), `${c.tool}: the test's arguments break inputSchema: ${ajv.errorsText(validIn.errors)}`);
    // callTool itself validates structuredContent against the outputSchema listed above.
    const res = await client.callTool({ name: c.tool, arguments: c.args });
    assert.equal(res.isError, false, `${c.tool}: ${JSON.stringify(res.content)}`);
    const validOut = ajv.compile(t.outputSchema);
    assert.ok(validOut(res.structuredContent),
      `${c.tool}: structuredContent breaks outputSchema: ${ajv.errorsText(validOut.errors)}`);
    assert.ok(res.content[0].type === 'text' && res.content[0].text.length > 20, `${c.tool}: sentence`);
    const path = c.path || `/api/profiles/${encodeURIComponent(res.structuredContent.id)}`;
    const want = await restAnswer(c.method, path, c.method === 'POST' ? c.args : null);
    // Over stdio the answer comes from another process with its own scan: the hardware and
    // the models list are the same, taken at another moment.
    if (mode === '--stdio' && (c.tool === 'detect_hardware' || c.tool === 'list_models'))
      assert.deepEqual(unscanned(res.structuredContent), unscanned(want), `${c.tool} differs from REST`);
    // A stdio process on its own store seeds the same shipped profile at another moment.
    else if (mode === '--stdio' && c.tool === 'lookup_model')
      assert.deepEqual(unstamped(res.structuredContent), unstamped(want), `${c.tool} differs from REST`);
    else
      assert.deepEqual(res.structuredContent, want, `${c.tool} differs from REST`);
    console.log(`ok ${c.tool}: ${res.content[0].text}`);
  }

  // Bad arguments: a tool result with isError and the route's envelope, naming the field.
  const bad = await client.callTool({ name: 'estimate', arguments: { model: { id: 'llama-3.1-8b' }, n_ctx: -3 } });
  assert.equal(bad.isError, true);
  const envelope = JSON.parse(bad.content[0].text);
  assert.equal(envelope.error.code, 'invalid_value');
  assert.equal(envelope.error.field, 'n_ctx');
  const unknown = await client.callTool({ name: 'estimate', arguments: { model: 'llama-3.1-8b', colour: 'red' } });
  assert.equal(unknown.isError, true);
  assert.equal(JSON.parse(unknown.content[0].text).error.field, 'colour');
  await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }), (e) => e.code === -32602);

  // Resources: the snapshot and the catalog. The daemon of tests/mcp/run.sh also serves the
  // conformance suite's fixtures (--mcp-conformance-fixtures); `rigfit mcp` does not.
  const list = await client.listResources();
  const uris = list.resources.map((r) => r.uri).sort();
  assert.deepEqual(uris.filter((u) => u.startsWith('rigfit://')), ['rigfit://hardware', 'rigfit://models']);
  assert.deepEqual(uris.filter((u) => !u.startsWith('rigfit://')),
    mode === '--http' ? ['test://static-binary', 'test://static-text'] : []);
  const hw = await client.readResource({ uri: 'rigfit://hardware' });
  assert.equal(hw.contents[0].mimeType, 'application/json');
  assert.ok(JSON.parse(hw.contents[0].text).cpu, 'the hardware resource has a cpu');
  const models = JSON.parse((await client.readResource({ uri: 'rigfit://models' })).contents[0].text);
  assert.ok(models.models.length > 10, 'the catalog has models');
  await client.setLoggingLevel('warning');
  await client.ping();
  await client.close();
  console.log(`ok ${mode.slice(2)}: ${tools.length} tools in ${pages} pages`);
}

main().catch((e) => {
  console.error(`FAIL ${mode}: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
