// tests/dap/session.js - a whole det-dap session driven by Microsoft's DAP
// client (@vscode/debugadapter-testsupport's DebugClient), on a trace of
// tests/programs/gdb_counter.c.
//
// Usage: node session.js CLIENT_DIR PYTHON DET_DAP TRACE SOURCE [ROUNDS]
// (ROUNDS of next + stepBack, timed: 2 by default, 5 for a median of 5)
// Prints one JSON line (what tests/dap/test_dap.py checks further: the
// session id, the timings); any failed assertion exits 1 with the message.
//
// Rules: every expectation is read from the replay itself (the event a stop
// names, the value gdb prints there), never written in here, except the
// program's own text (its source lines, its output).
'use strict';

const assert = require('assert');
const path = require('path');

const [clientDir, python, detDap, trace, source, rounds = '2'] = process.argv.slice(2);
const { DebugClient } = require(path.join(clientDir, 'node_modules', '@vscode', 'debugadapter-testsupport'));

const LOCK_LINE = 32;    // pthread_mutex_lock(m);
const ADD_LINE = 33;     // counter += id;
const UNLOCK_LINE = 34;  // pthread_mutex_unlock(m);

async function stopAfter(dc, send) {
  // a request that moves the program: its response, then its stopped event
  const t0 = process.hrtime.bigint();
  const stopped = dc.waitForEvent('stopped', 120000);
  await send();
  const ev = await stopped;
  return { ev, ms: Number(process.hrtime.bigint() - t0) / 1e6 };
}

async function top(dc, threadId) {
  const st = await dc.stackTraceRequest({ threadId });
  assert.ok(st.body.stackFrames.length > 0, 'a stack');
  for (const f of st.body.stackFrames) {
    assert.ok(!/\/(preload|replayer|recorder)\//.test((f.source || {}).path || ''), `det's frame shown: ${f.name}`);
  }
  return st.body.stackFrames[0];
}

async function refused(promise, what) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e.message && !/Traceback/.test(e.message), `${what}: one-line error, got ${e.message}`);
    return e.message;
  }
  assert.fail(`${what} was not refused`);
}

async function main() {
  const dc = new DebugClient(python, detDap, 'det', { stdio: ['pipe', 'pipe', 'pipe'] });
  dc.defaultTimeout = 120000;
  const out = { errors: {}, requests: 0 };
  const send = dc.send.bind(dc);
  dc.send = (command, args) => { out.requests++; return send(command, args); };
  let output = '';
  dc.on('output', (e) => { if (e.body.category === 'stdout') output += e.body.output; });
  let exited = null;
  dc.on('exited', (e) => { exited = e.body; });
  let schedule = null;
  dc.on('detSchedule', (e) => { schedule = e.body; });
  const proc = dc.waitForEvent('process', 120000);
  await dc.start();

  // launch, break at a line
  const init = await dc.initializeRequest();
  for (const cap of ['supportsStepBack', 'supportsGotoTargetsRequest', 'supportsConditionalBreakpoints',
    'supportsTerminateRequest', 'supportsConfigurationDoneRequest']) {
    assert.strictEqual(init.body[cap], true, cap);
  }
  const initialized = dc.waitForEvent('initialized', 120000);
  await dc.launchRequest({ trace });
  out.sid = (await proc).body.systemProcessId;
  await initialized;
  const bps = await dc.setBreakpointsRequest({ source: { path: source }, breakpoints: [{ line: ADD_LINE }] });
  assert.strictEqual(bps.body.breakpoints[0].verified, true, 'breakpoint verified');
  assert.strictEqual(bps.body.breakpoints[0].line, ADD_LINE);
  let { ev } = await stopAfter(dc, () => dc.configurationDoneRequest());
  assert.strictEqual(ev.body.reason, 'breakpoint');
  const tid = ev.body.threadId;
  const firstHit = ev.body.detEvent;
  assert.match(ev.body.description, new RegExp(`event ${firstHit}$`));
  assert.strictEqual((await top(dc, tid)).line, ADD_LINE);

  const threads = (await dc.threadsRequest()).body.threads.map((t) => t.name);
  assert.deepStrictEqual(threads.slice().sort(), ['T0', 'T1', 'T2'], 'det names the threads');

  // inspect variables
  let frame = await top(dc, tid);
  const scopes = await dc.scopesRequest({ frameId: frame.id });
  const vars = (await dc.variablesRequest({ variablesReference: scopes.body.scopes[0].variablesReference })).body.variables;
  const id = vars.find((v) => v.name === 'id');
  assert.ok(id && /^[12]$/.test(id.value), `the worker's id: ${JSON.stringify(vars)}`);
  // a pointer opens to what it points at (gdb variable objects): the mutex this thread holds
  const m = vars.find((v) => v.name === 'm');
  assert.ok(m && m.variablesReference > 0 && /<lock>/.test(m.value), `m: ${JSON.stringify(m)}`);
  const mutex = (await dc.variablesRequest({ variablesReference: m.variablesReference })).body.variables;
  const data = mutex.find((v) => v.name === '__data');
  assert.ok(data && data.variablesReference > 0, `*m: ${JSON.stringify(mutex)}`);
  const fields = (await dc.variablesRequest({ variablesReference: data.variablesReference })).body.variables;
  const owner = fields.find((v) => v.name === '__owner');
  assert.ok(owner && Number(owner.value) > 0, `the lock is held at its critical section: ${JSON.stringify(fields)}`);
  const counterAtFirstHit = (await dc.evaluateRequest({ expression: 'counter', frameId: frame.id })).body.result;
  assert.match(counterAtFirstHit, /^\d+$/);

  // step, step back (timed)
  out.next_ms = [];
  out.step_back_ms = [];
  for (let i = 0; i < Number(rounds); i++) {
    let r = await stopAfter(dc, () => dc.nextRequest({ threadId: tid }));
    assert.strictEqual(r.ev.body.reason, 'step');
    assert.strictEqual((await top(dc, r.ev.body.threadId)).line, UNLOCK_LINE, 'next went to the next line');
    out.next_ms.push(r.ms);
    r = await stopAfter(dc, () => dc.stepBackRequest({ threadId: tid }));
    assert.strictEqual(r.ev.body.reason, 'step');
    assert.strictEqual((await top(dc, r.ev.body.threadId)).line, ADD_LINE, 'stepBack went back a line');
    assert.strictEqual(r.ev.body.detEvent, firstHit, 'stepBack: back before the same event');
    out.step_back_ms.push(r.ms);
  }
  frame = await top(dc, tid);
  assert.strictEqual((await dc.evaluateRequest({ expression: 'counter', frameId: frame.id })).body.result,
    counterAtFirstHit, 'the value after going back is the value there before');
  // stepIn at the unlock: libdet's pthread_mutex_unlock has no program lines, gdb steps over it
  await stopAfter(dc, () => dc.nextRequest({ threadId: tid }));
  ({ ev } = await stopAfter(dc, () => dc.stepInRequest({ threadId: tid })));
  assert.strictEqual(ev.body.reason, 'step');
  assert.strictEqual((await top(dc, ev.body.threadId)).line, UNLOCK_LINE + 1, 'stepIn: the line after the unlock');
  assert.ok(ev.body.detEvent > firstHit, 'the unlock was done');

  // forward to the next hit, reverse-continue back to this one
  ({ ev } = await stopAfter(dc, () => dc.continueRequest({ threadId: tid })));
  assert.strictEqual(ev.body.reason, 'breakpoint');
  assert.ok(ev.body.detEvent > firstHit, `continue went forward: ${ev.body.detEvent}`);
  ({ ev } = await stopAfter(dc, () => dc.reverseContinueRequest({ threadId: ev.body.threadId })));
  assert.strictEqual(ev.body.reason, 'breakpoint');
  assert.deepStrictEqual(ev.body.hitBreakpointIds, [bps.body.breakpoints[0].id]);
  assert.strictEqual(ev.body.detEvent, firstHit, 'reverse-continue: the last hit before');
  frame = await top(dc, ev.body.threadId);
  assert.strictEqual(frame.line, ADD_LINE);
  assert.strictEqual((await dc.evaluateRequest({ expression: 'counter', frameId: frame.id })).body.result,
    counterAtFirstHit);

  // goto an event: the recorded mutex_locks at the lock line
  const targets = (await dc.gotoTargetsRequest({ source: { path: source }, line: LOCK_LINE })).body.targets;
  assert.ok(targets.length >= 10, `gotoTargets: ${targets.length}`);
  const target = targets[Math.floor(targets.length / 2)];
  assert.match(target.label, /mutex_lock mutex \d+ \(lock\)/);
  ({ ev } = await stopAfter(dc, () => dc.gotoRequest({ threadId: tid, targetId: target.id })));
  assert.strictEqual(ev.body.reason, 'goto');
  assert.strictEqual(ev.body.detEvent, target.id);
  assert.match(ev.body.description, new RegExp(`event ${target.id}$`));
  const sched = (await dc.customRequest('detSchedule', { before: 3, after: 3 })).body;
  assert.strictEqual(sched.position, target.id);
  const here = sched.events.find((e) => e.current);
  assert.ok(here && here.event === target.id && here.kind === 'mutex_lock' && here.line === LOCK_LINE,
    JSON.stringify(here));
  assert.strictEqual(sched.events.length, 7);
  assert.ok(schedule && schedule.position === target.id, 'the detSchedule event followed the stop');
  frame = await top(dc, ev.body.threadId);
  assert.strictEqual(frame.line, LOCK_LINE, 'at the event: its call');

  // bad input: DAP errors, and the session goes on
  out.errors.unknown = await refused(dc.customRequest('noSuchRequest', {}), 'an unknown request');
  out.errors.bad_arg = await refused(dc.nextRequest({ threadId: 'T1' }), 'a bad threadId');
  out.errors.bad_goto = await refused(dc.gotoRequest({ threadId: tid, targetId: -3 }), 'goto -3');
  out.errors.bad_expr = await refused(dc.evaluateRequest({ expression: 'no_such_variable + 1', frameId: frame.id }),
    'a bad expression');
  await dc.threadsRequest();

  // many requests at one stop: the same answers each time (a session of 100+ requests)
  const stack0 = JSON.stringify((await dc.stackTraceRequest({ threadId: ev.body.threadId })).body);
  for (let i = 0; i < 20; i++) {
    assert.strictEqual(JSON.stringify((await dc.stackTraceRequest({ threadId: ev.body.threadId })).body), stack0);
    await dc.threadsRequest();
    const f = await top(dc, ev.body.threadId);
    assert.match((await dc.evaluateRequest({ expression: 'counter + 0', frameId: f.id })).body.result, /^\d+$/);
  }

  // a conditional breakpoint, from the first lock of the run
  ({ ev } = await stopAfter(dc, () => dc.gotoRequest({ threadId: tid, targetId: targets[0].id })));
  assert.strictEqual(ev.body.detEvent, targets[0].id);
  const cond = await dc.setBreakpointsRequest({ source: { path: source },
    breakpoints: [{ line: ADD_LINE, condition: 'id == 1 && i == 2' }] });
  assert.strictEqual(cond.body.breakpoints[0].verified, true);
  ({ ev } = await stopAfter(dc, () => dc.continueRequest({ threadId: tid })));
  assert.strictEqual(ev.body.reason, 'breakpoint');
  frame = await top(dc, ev.body.threadId);
  assert.strictEqual(frame.line, ADD_LINE);
  for (const [expr, want] of [['id', '1'], ['i', '2']]) {
    assert.strictEqual((await dc.evaluateRequest({ expression: expr, frameId: frame.id })).body.result, want, expr);
  }

  // to the end: the program's output, the recorded outcome
  await dc.setBreakpointsRequest({ source: { path: source }, breakpoints: [] });
  const exitedEvent = dc.waitForEvent('exited', 120000);
  ({ ev } = await stopAfter(dc, () => dc.continueRequest({ threadId: tid })));
  await exitedEvent;
  assert.strictEqual(ev.body.reason, 'exit');
  assert.match(output, /^counter \d+\n$/);
  assert.deepStrictEqual(exited, { exitCode: 0 });
  out.output = output;

  const adapterExit = new Promise((resolve) => dc._adapterProcess.on('exit', (code) => resolve(code)));
  await dc.disconnectRequest({});
  out.adapter_exit = await adapterExit;
  console.log(JSON.stringify(out));
}

main().catch((e) => { console.error(`session.js: ${e.stack || e}`); process.exit(1); });
