// tests/dap/refusals.js - det-dap answers bad launches with DAP errors, and
// stays up: a damaged trace, a missing one, no trace argument, requests that
// need a launched trace; then a good launch still works.
//
// Usage: node refusals.js CLIENT_DIR PYTHON DET_DAP DAMAGED MISSING GOOD
// Prints one JSON line: each refusal's message (tests/dap/test_dap.py checks them).
'use strict';

const assert = require('assert');
const path = require('path');

const [clientDir, python, detDap, damaged, missing, good] = process.argv.slice(2);
const { DebugClient } = require(path.join(clientDir, 'node_modules', '@vscode', 'debugadapter-testsupport'));

async function refused(promise, what) {
  try {
    await promise;
  } catch (e) {
    return e.message;
  }
  assert.fail(`${what} was not refused`);
}

async function main() {
  const dc = new DebugClient(python, detDap, 'det', { stdio: ['pipe', 'pipe', 'pipe'] });
  dc.defaultTimeout = 120000;
  await dc.start();
  await dc.initializeRequest();
  const out = {};
  out.damaged = await refused(dc.launchRequest({ trace: damaged }), 'a damaged trace');
  out.missing = await refused(dc.launchRequest({ trace: missing }), 'a missing trace');
  out.no_trace = await refused(dc.launchRequest({}), 'no trace');
  out.bad_type = await refused(dc.launchRequest({ trace: 7 }), 'a number for a trace');
  out.threads = await refused(dc.threadsRequest(), 'threads before a launch');
  out.step_back = await refused(dc.stepBackRequest({ threadId: 1 }), 'stepBack before a launch');
  const proc = dc.waitForEvent('process', 120000);
  await dc.launchRequest({ trace: good });
  out.sid = (await proc).body.systemProcessId;
  out.threads_after = (await dc.threadsRequest()).body.threads.map((t) => t.name);
  out.again = await refused(dc.launchRequest({ trace: good }), 'a second launch');
  const adapterExit = new Promise((resolve) => dc._adapterProcess.on('exit', (code) => resolve(code)));
  await dc.terminateRequest({});
  await dc.disconnectRequest({});
  out.adapter_exit = await adapterExit;
  console.log(JSON.stringify(out));
}

main().catch((e) => { console.error(`refusals.js: ${e.stack || e}`); process.exit(1); });
