// editor/vscode/extension.js - the `det` debugger: VS Code runs det-dap
// (det's Debug Adapter Protocol server, dap/) on stdio, and shows det's
// schedule (the detSchedule event and request) in an output channel.
//
// Rules: everything det knows comes from det-dap; this file only starts it
// and displays what it says.
'use strict';

const vscode = require('vscode');

function scheduleText(s) {
  const lines = [`det: at event ${s.position} (${s.thread}); the trace has events ${s.first}..${s.last}`];
  for (const e of s.events) {
    const where = e.source ? ` ${e.source.name}:${e.line}` : '';
    lines.push(`${e.current ? '>' : ' '} ${String(e.event).padStart(6)} ${e.thread.padEnd(4)} ${e.kind} ${e.object}${where}`);
  }
  return lines.join('\n');
}

function activate(context) {
  const channel = vscode.window.createOutputChannel('det schedule');
  context.subscriptions.push(channel);
  context.subscriptions.push(vscode.debug.registerDebugAdapterDescriptorFactory('det', {
    createDebugAdapterDescriptor() {
      const command = vscode.workspace.getConfiguration('det').get('dapPath') || 'det-dap';
      return new vscode.DebugAdapterExecutable(command, []);
    },
  }));
  context.subscriptions.push(vscode.debug.onDidReceiveDebugSessionCustomEvent((e) => {
    if (e.session.type === 'det' && e.event === 'detSchedule') {
      channel.clear();
      channel.append(scheduleText(e.body));
    }
  }));
  context.subscriptions.push(vscode.commands.registerCommand('det.showSchedule', async () => {
    const session = vscode.debug.activeDebugSession;
    if (!session || session.type !== 'det') {
      vscode.window.showWarningMessage('det: no det debug session');
      return;
    }
    const s = await session.customRequest('detSchedule', { before: 20, after: 20 });
    channel.clear();
    channel.append(scheduleText(s));
    channel.show(true);
  }));
}

function deactivate() {}

module.exports = { activate, deactivate };
