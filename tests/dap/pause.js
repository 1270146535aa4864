// tests/dap/pause.js - det-dap's pause interrupts a running replay: the
// stopped event (reason pause) names an event inside the trace; continuing
// then runs to the recorded end.
//
// Usage: node pause.js CLIENT_DIR PYTHON DET_DAP TRACE
// Prints one JSON line (tests/dap/test_dap.py checks it further).
'use strict';

const assert = require('assert');
const path = require('path');

const [clientDir, python, detDap, trace] = process.argv.slice(2);
const { DebugClient } = require(path.join(clientDir, 'node_modules', '@vscode', 'debugadapter-testsupport'));

async function main() {
  const dc = new DebugClient(python, detDap, 'det', { stdio: ['pipe', 'pipe', 'pipe'] });
  dc.defaultTimeout = 120000;
  let output = '';
  dc.on('output', (e) => { if (e.body.category === 'stdout') output += e.body.output; });
  const proc = dc.waitForEvent('process', 120000);
  await dc.start();
  await dc.initializeRequest();
  const initialized = dc.waitForEvent('initialized', 120000);
  await dc.launchRequest({ trace });
  const out = { sid: (await proc).body.systemProcessId };
  await initialized;
  let stopped = dc.waitForEvent('stopped', 120000);
  const running = dc.configurationDoneRequest();      // answered when the program stops
  await new Promise((resolve) => setTimeout(resolve, 700));
  await dc.pauseRequest({ threadId: 1 });
  await running;
  let ev = await stopped;
  assert.strictEqual(ev.body.reason, 'pause', JSON.stringify(ev.body));
  out.paused_at = ev.body.detEvent;
  // (which threads exist depends on where the pause landed: test_dap.py checks them against the trace)
  out.threads = (await dc.threadsRequest()).body.threads.map((t) => t.name).sort();
  assert.strictEqual(output, '', 'paused before the program printed');
  stopped = dc.waitForEvent('stopped', 120000);
  const exited = dc.waitForEvent('exited', 120000);
  await dc.continueRequest({ threadId: 1 });
  ev = await stopped;
  assert.strictEqual(ev.body.reason, 'exit');
  out.exit_code = (await exited).body.exitCode;
  out.output = output;
  const adapterExit = new Promise((resolve) => dc._adapterProcess.on('exit', (code) => resolve(code)));
  await dc.disconnectRequest({});
  out.adapter_exit = await adapterExit;
  console.log(JSON.stringify(out));
}

main().catch((e) => { console.error(`pause.js: ${e.stack || e}`); process.exit(1); });
