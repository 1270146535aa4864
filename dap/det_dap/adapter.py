"""det-dap's requests: each DAP request becomes gdb/MI commands or one of
det's gdb commands in a `detreplay --gdb` session (det.gdbmi).

Rules of this file:
  - Going back is det's: stepBack is gdb's reverse-next, reverseContinue is
    reverse-continue, goto is `det goto N` (gdb-ext/det_gdb/commands/), all
    by re-execution; nothing here computes a position, gdb reads it back.
  - One worker thread talks to gdb, requests in the order they came; only
    `pause` is answered by the reading thread (it interrupts the program
    while the worker waits for gdb).
  - Every request gets a response: an unknown request, a bad argument, a
    damaged trace or a gdb error is `success: false` with one line, never a
    traceback or an exit.
  - Threads are det's (gdb names them T0, T1...); frames in det's own code
    (det.gdbmi.INNER, libdet.so's) are not shown, unless the thread is in
    none of the program's (then all are, marked subtle). The stopped event's
    description names the det event the replay is at.
  - disconnect and terminate leave no process: det.gdbmi closes the session.
"""

from __future__ import annotations

import os
import queue
import re
import threading
import time
from collections.abc import Callable
from typing import Any

from det.errors import DetError
from det.gdbmi import INNER, LiveError, LiveSession, Position, mi_quote
from det.trace import outcome_words

from .wire import Writer

SCHEDULE_WINDOW = 10          # events each side of the position that detSchedule lists by default
FRAMES = 64


class RequestError(DetError):
    """A request det-dap cannot do: its response's message."""


def arg(args: dict[str, Any], name: str, kind: type, default: Any = ...) -> Any:
    """A request argument of the given type, or RequestError naming it."""
    if name not in args or args[name] is None:
        if default is ...:
            raise RequestError(f"missing argument {name!r}")
        return default
    v = args[name]
    if kind is int and isinstance(v, bool) or not isinstance(v, kind):
        raise RequestError(f"argument {name!r} must be {kind.__name__}, not {type(v).__name__}")
    return v


# gdb's *stopped reasons -> DAP's stopped reasons
STOP_REASONS = {"breakpoint-hit": "breakpoint", "watchpoint-trigger": "data breakpoint",
                "read-watchpoint-trigger": "data breakpoint", "access-watchpoint-trigger": "data breakpoint",
                "end-stepping-range": "step", "function-finished": "step", "location-reached": "goto",
                "signal-received": "exception"}


def det_frame(f: dict[str, Any]) -> bool:
    """A frame of det's own code (or libc's under it): by its source, or, without one, its library."""
    path = f.get("fullname") or f.get("file")
    if path:
        return any(p in path for p in INNER)
    return os.path.basename(f.get("from", "")).startswith(("libdet.so", "libdetsup.so"))


def expandable(ctype: str) -> bool:
    """A pointer worth opening in the variables view (to a struct, an array, another pointer), not a string."""
    t = ctype.replace("const ", "").strip()
    return t.endswith("*") and t.rstrip("* ") not in ("char", "void", "unsigned char", "signed char")


class Adapter:
    """One DAP session: a trace, its gdb session, the client's state."""

    def __init__(self, out: Writer) -> None:
        self.out = out
        self.session: LiveSession | None = None
        self.model: Any = None          # det.tui.model.TraceModel, read when launched
        self.trace = ""
        self.running = False            # a command that runs the program is under way
        self.paused = False             # pause interrupted it
        self.ended = False              # the replayed program exited
        self.breakpoints: dict[str, list[str]] = {}   # source path -> gdb breakpoint numbers
        self.function_breakpoints: list[str] = []
        self.handles: dict[int, tuple[str, int, int]] = {}   # frame/variables reference -> (what, thread, level)
        self.varobjs: dict[int, str] = {}                    # variables reference -> gdb variable object
        self.var_roots: list[str] = []                       # the variable objects made since the last move
        self.next_handle = 1
        self.stop_on_entry = False
        self.after: list[Callable[[], None]] = []     # events to send after the current response
        self.work: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.done = threading.Event()
        self.worker = threading.Thread(target=self._work, name="det-dap gdb", daemon=True)
        self.worker.start()

    # ----- the threads

    def take(self, request: dict[str, Any]) -> None:
        """A request from the client (the reading thread)."""
        if request.get("type") != "request" or not isinstance(request.get("command"), str):
            self.out.respond(request, error="det-dap: not a DAP request")
            return
        if request["command"] == "pause":
            self._pause(request)
            return
        self.work.put(request)

    def finish(self) -> None:
        """The input ended: close whatever is open, after the queued requests."""
        self.work.put(None)
        self.worker.join()

    def _work(self) -> None:
        while True:
            request = self.work.get()
            if request is None or self.done.is_set():
                self._close()
                return
            self._handle(request)

    def _handle(self, request: dict[str, Any]) -> None:
        command = request["command"]
        if request.get("internal"):        # a pause while nothing ran: the stopped event, in order
            if self.session is not None:
                self._stopped("pause", self.session.position)
            return
        handler: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any] | None] | None = \
            getattr(self, "do_" + command, None) if re.fullmatch(r"[A-Za-z]+", command) else None
        if handler is None:
            self.out.respond(request, error=f"det-dap: unknown request {command!r}")
            return
        args = request.get("arguments") or {}
        after: list[Callable[[], None]] = []
        try:
            if not isinstance(args, dict):
                raise RequestError("arguments must be an object")
            self.after = after
            body = handler(request, args)
        except (DetError, OSError, ValueError) as e:
            self.out.respond(request, error=f"{command}: {e}")
        except Exception as e:  # noqa: BLE001 - a bug answers the request, the session goes on
            self.out.respond(request, error=f"{command}: det-dap failed: {type(e).__name__}: {e}")
        else:
            self.out.respond(request, body)
        for f in after:
            try:
                f()
            except Exception as e:  # noqa: BLE001 - an event that failed is said; the session goes on
                self.out.event("output", {"category": "stderr", "output": f"det-dap: {command}: {e}\n"})

    # ----- lifecycle

    def do_initialize(self, req: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
        return {
            "supportsConfigurationDoneRequest": True,
            "supportsStepBack": True,
            "supportsGotoTargetsRequest": True,
            "supportsConditionalBreakpoints": True,
            "supportsFunctionBreakpoints": True,
            "supportsTerminateRequest": True,
            "supportsEvaluateForHovers": True,
            "supportsSingleThreadExecutionRequests": False,
        }

    def do_launch(self, req: dict[str, Any], args: dict[str, Any]) -> None:
        from det.tui.model import TraceModel

        if self.session is not None:
            raise RequestError("a trace is already launched")
        trace = arg(args, "trace", str)
        self.stop_on_entry = arg(args, "stopOnEntry", bool, False)
        model = TraceModel(trace)      # a damaged trace is refused here, in one line
        try:
            self.session = LiveSession(model.path)
        except BaseException:
            model.close()
            raise
        self.model, self.trace = model, str(model.path)
        self._output(self.session.position)
        # the process event's id is detreplay's: gdb and the program run in its process session
        sid = self.session.sid
        self.after.append(lambda: self.out.event("process", {"name": self.trace, "systemProcessId": sid,
                                                            "isLocalProcess": True, "startMethod": "launch"}))
        # configuration (breakpoints) can come now that gdb is there
        self.after.append(lambda: self.out.event("initialized"))

    def do_configurationDone(self, req: dict[str, Any], args: dict[str, Any]) -> None:
        s = self._session()
        if self.stop_on_entry:
            self.after.append(lambda: self._stopped("entry", s.position))
        else:
            self._run("continue", "continue")

    def do_disconnect(self, req: dict[str, Any], args: dict[str, Any]) -> None:
        self._close()
        self.done.set()

    def do_terminate(self, req: dict[str, Any], args: dict[str, Any]) -> None:
        self._close()
        self.after.append(lambda: self.out.event("terminated"))

    def _close(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None
        if self.model is not None:
            self.model.close()
            self.model = None

    def _session(self) -> LiveSession:
        if self.session is None:
            raise RequestError("no trace launched (launch {\"trace\": PATH} first)")
        return self.session

    # ----- breakpoints

    def do_setBreakpoints(self, req: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
        s = self._session()
        source = arg(args, "source", dict)
        path = arg(source, "path", str)
        wanted = arg(args, "breakpoints", list, None)
        if wanted is None:
            wanted = [{"line": n} for n in arg(args, "lines", list, [])]
        for number in self.breakpoints.pop(path, []):
            s.mi_command(f"-break-delete {number}")
        out, numbers = [], []
        for b in wanted:
            if not isinstance(b, dict):
                raise RequestError("a breakpoint is an object with a line")
            line = arg(b, "line", int)
            out.append(self._insert(f"{path}:{line}", arg(b, "condition", str, ""), numbers))
        self.breakpoints[path] = numbers
        return {"breakpoints": out}

    def do_setFunctionBreakpoints(self, req: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
        s = self._session()
        for number in self.function_breakpoints:
            s.mi_command(f"-break-delete {number}")
        self.function_breakpoints = []
        out = []
        for b in arg(args, "breakpoints", list):
            if not isinstance(b, dict):
                raise RequestError("a breakpoint is an object with a name")
            out.append(self._insert(arg(b, "name", str), arg(b, "condition", str, ""), self.function_breakpoints))
        return {"breakpoints": out}

    def do_setExceptionBreakpoints(self, req: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
        return {"breakpoints": []}

    def _insert(self, location: str, condition: str, numbers: list[str]) -> dict[str, Any]:
        cond = f"-c {mi_quote(condition)} " if condition else ""
        try:
            bkpt = self._session().mi_command(f"-break-insert -f {cond}{mi_quote(location)}").get("bkpt", {})
        except LiveError as e:
            return {"verified": False, "message": str(e)}
        numbers.append(bkpt.get("number", ""))
        out: dict[str, Any] = {"id": int(float(bkpt.get("number", "0"))), "verified": bkpt.get("pending") is None}
        if bkpt.get("line", "").isdigit():
            out["line"] = int(bkpt["line"])
        if bkpt.get("fullname"):
            out["source"] = {"name": os.path.basename(bkpt["fullname"]), "path": bkpt["fullname"]}
        return out

    # ----- running, forward and back

    def do_continue(self, req: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
        self._run("continue", "continue")
        return {"allThreadsContinued": True}

    def do_next(self, req: dict[str, Any], args: dict[str, Any]) -> None:
        self._run("next", "step", args)

    def do_stepIn(self, req: dict[str, Any], args: dict[str, Any]) -> None:
        self._run("step", "step", args)

    def do_stepOut(self, req: dict[str, Any], args: dict[str, Any]) -> None:
        self._run("finish", "step", args)

    def do_stepBack(self, req: dict[str, Any], args: dict[str, Any]) -> None:
        self._run("reverse-next", "step", args)

    def do_reverseContinue(self, req: dict[str, Any], args: dict[str, Any]) -> None:
        self._run("reverse-continue", "reverse-continue", args)

    def do_gotoTargets(self, req: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
        """The recorded events at a source line: going to one is `det goto N` (the target's id is N)."""
        self._session()
        source = arg(args, "source", dict)
        path = arg(source, "path", str, "") or arg(source, "name", str)
        line = arg(args, "line", int)
        name = os.path.basename(path)
        sites = {site for site, loc in self.model.locations().items()
                 if loc.file and loc.line == line and os.path.basename(loc.file) == name}
        targets = []
        if sites:
            for e in self.model.tr.events_at(list(self.model.tr.seqs(sites=sites))[:200]):
                targets.append({"id": e.seq, "label": f"event {e.seq}: {self._event_words(e)}", "line": line})
        return {"targets": targets}

    def do_goto(self, req: dict[str, Any], args: dict[str, Any]) -> None:
        """targetId is a det event number (gotoTargets' ids are)."""
        event = arg(args, "targetId", int)
        if event < 0:
            raise RequestError(f"no event {event}")
        self._run(f"det goto {event}", "goto")

    def _run(self, command: str, kind: str, args: dict[str, Any] | None = None) -> None:
        """Run a command that moves the program; the stopped (or exited) event follows the response."""
        s = self._session()
        if self.ended and kind not in ("goto", "step", "reverse-continue"):
            raise RequestError("the replay has ended: step back, reverse-continue or goto an event")
        thread = arg(args, "threadId", int, None) if args else None
        if thread is not None and not self.ended:
            try:
                s.mi_command(f"-thread-select {thread}")
            except LiveError:
                pass     # a thread gone in a re-execution: the command runs on gdb's current thread
        self.running, self.paused = True, False
        try:
            pos = s.console(command)
        finally:
            self.running = False
        self._forget()
        self._output(pos)
        self.after.append(lambda: self._report(pos, kind))

    def _report(self, pos: Position, kind: str) -> None:
        stops = [r["payload"] for r in pos.records if r["type"] == "notify" and r["message"] == "stopped"]
        last = stops[-1] if stops and isinstance(stops[-1], dict) else {}
        why = last.get("reason", "")
        if why.startswith("exited"):
            self.ended = True
            o = self.model.outcome if self.model is not None else None
            code = int(o.get("exit_code") or 0) if o and o.get("status") == "exited" else \
                128 + int(o.get("signal") or 0) if o and o.get("status") == "signaled" else 1
            self.out.event("exited", {"exitCode": code})
            self._stopped("exit", pos, f"the replay ended; recorded: {outcome_words(o)}")
            return
        self.ended = False
        hit: list[int] = []
        if kind == "reverse-continue":
            said = " ".join(pos.said)
            m = re.search(r"reverse-continue: (?:Breakpoint|Watchpoint|\w*watchpoint) (\d+)", said)
            reason = "breakpoint" if m else "step"
            if m:
                hit = [int(m.group(1))]
        elif self.paused:
            reason = "pause"
        elif kind in ("goto",):
            reason = "goto"
        else:
            reason = STOP_REASONS.get(why, "step" if kind == "step" else "pause")
            if why == "breakpoint-hit" and str(last.get("bkptno", "")).isdigit():
                hit = [int(last["bkptno"])]
        self._stopped(reason, pos, hit=hit)

    def _stopped(self, reason: str, pos: Position, text: str = "", hit: list[int] | None = None) -> None:
        s = self.session
        thread = None
        if s is not None and not self.ended:
            try:
                thread = int(s.mi_command("-thread-info").get("current-thread-id", "0")) or None
            except (LiveError, ValueError):
                thread = None
        where = f"event {pos.event}" if pos.event is not None else "no event"
        said = next((ln for ln in reversed(pos.said) if ln.startswith("det: ")), "")
        body: dict[str, Any] = {"reason": reason, "allThreadsStopped": True,
                                "description": "det: the replay ended" if reason == "exit" else f"det {where}",
                                "text": text or said or f"det: at {where}", "detEvent": pos.event,
                                "detThread": pos.thread}
        if thread is not None:
            body["threadId"] = thread
        if hit:
            body["hitBreakpointIds"] = hit
        self.out.event("stopped", body)
        if self.model is not None:
            try:
                self.out.event("detSchedule", self.schedule(pos.event, SCHEDULE_WINDOW, SCHEDULE_WINDOW))
            except DetError:
                pass

    def _pause(self, req: dict[str, Any]) -> None:
        """From the reading thread: interrupt a running command, else say where we are."""
        s = self.session
        if s is None:
            self.out.respond(req, error="pause: no trace launched")
            return
        if self.running:
            self.paused = True
            s.interrupt()
            self.out.respond(req)
        else:
            self.out.respond(req)
            self.work.put({"type": "request", "command": "pause", "seq": 0, "internal": True})

    def _output(self, pos: Position) -> None:
        """The program's output and det's own lines, as output events."""
        if pos.output:
            self.out.event("output", {"category": "stdout", "output": pos.output})
        for r in pos.records:
            if r["type"] in ("output", "target") and isinstance(r.get("payload"), str):
                self.out.event("output", {"category": "stdout", "output": r["payload"] + "\n"})
        for line in pos.said:
            if line.startswith("det: "):
                self.out.event("output", {"category": "console", "output": line + "\n"})

    # ----- what is there

    def do_threads(self, req: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
        s = self._session()
        if self.ended:
            return {"threads": []}
        threads = s.mi_command("-thread-info").get("threads", [])
        return {"threads": [{"id": int(t["id"]), "name": t.get("name") or f"gdb thread {t['id']}"} for t in threads]}

    def do_stackTrace(self, req: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
        s = self._session()
        thread = arg(args, "threadId", int)
        start = arg(args, "startFrame", int, 0)
        levels = arg(args, "levels", int, 0) or FRAMES
        stack = s.mi_command(f"-stack-list-frames --thread {thread} 0 {FRAMES - 1}").get("stack", [])
        frames = []
        mine = [f for f in stack if not det_frame(f)]
        for f in stack:
            path = f.get("fullname") or f.get("file")
            if det_frame(f) and mine:
                continue        # det's own: shown (subtle) only when the thread is in none of the program's
            level = int(f.get("level", 0))
            ref = self._handle_for("frame", thread, level)
            fr: dict[str, Any] = {"id": ref, "name": f.get("func", "??"), "line": int(f.get("line", 0) or 0),
                                  "column": 0, "instructionPointerReference": f.get("addr")}
            if path:
                fr["source"] = {"name": os.path.basename(path), "path": path}
            if not path or not mine:
                fr["presentationHint"] = "subtle"
            frames.append(fr)
        return {"stackFrames": frames[start:start + levels], "totalFrames": len(frames)}

    def do_scopes(self, req: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
        _, thread, level = self._frame(arg(args, "frameId", int))
        ref = self._handle_for("locals", thread, level)
        return {"scopes": [{"name": "Locals", "presentationHint": "locals", "variablesReference": ref,
                            "expensive": False}]}

    def do_variables(self, req: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
        s = self._session()
        ref = arg(args, "variablesReference", int)
        if ref in self.varobjs:
            kids = s.mi_command(f"-var-list-children --all-values {self.varobjs[ref]}").get("children", [])
            out = []
            for k in kids:
                k = k.get("child", k) if isinstance(k, dict) else {}
                sub = 0
                if int(k.get("numchild", "0") or 0) > 0:
                    sub = self._new_ref()
                    self.varobjs[sub] = k["name"]
                out.append({"name": k.get("exp", "?"), "value": k.get("value", ""), "type": k.get("type", ""),
                            "variablesReference": sub})
            return {"variables": out}
        what, thread, level = self.handles.get(ref, ("", 0, 0))
        if what != "locals":
            raise RequestError(f"no variables {ref} (references last until the program moves)")
        got = s.mi_command(f"-stack-list-variables --thread {thread} --frame {level} --simple-values").get(
            "variables", [])
        out = []
        for v in got:
            value, sub = v.get("value"), 0
            if value is None or expandable(v.get("type", "")):
                value, sub = self._varobj(thread, level, v["name"], value)
            out.append({"name": v["name"], "value": value, "type": v.get("type", ""), "variablesReference": sub})
        return {"variables": out}

    def _varobj(self, thread: int, level: int, expr: str, value: str | None) -> tuple[str, int]:
        """A gdb variable object for expr in the frame: (its value, a reference to its children or 0)."""
        try:
            v = self._session().mi_command(f"-var-create --thread {thread} --frame {level} - * {mi_quote(expr)}")
        except LiveError as e:
            return value if value is not None else f"<{e}>", 0
        self.var_roots.append(v["name"])
        if int(v.get("numchild", "0") or 0) == 0:
            return v.get("value", value or ""), 0
        ref = self._new_ref()
        self.varobjs[ref] = v["name"]
        return v.get("value", value or ""), ref

    def _forget(self) -> None:
        """The program moved: frames and variables are gdb's new ones."""
        s = self.session
        for name in self.var_roots if s is not None else []:
            try:
                s.mi_command(f"-var-delete {name}")
            except LiveError:
                pass
        self.var_roots.clear()
        self.varobjs.clear()
        self.handles.clear()

    def do_evaluate(self, req: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
        """An expression in the frame; in the debug console, a line starting with `det ` is det's command."""
        s = self._session()
        expr = arg(args, "expression", str)
        if arg(args, "context", str, "") == "repl" and (expr.startswith("det ") or expr == "det"):
            pos = s.console(expr)
            self._output(pos)
            return {"result": "\n".join(ln for ln in pos.said if not ln.startswith("det: ")) or
                    "\n".join(pos.said), "variablesReference": 0}
        where = ""
        if args.get("frameId") is not None:
            _, thread, level = self._frame(arg(args, "frameId", int))
            where = f"--thread {thread} --frame {level} "
        value = s.mi_command(f"-data-evaluate-expression {where}{mi_quote(expr)}").get("value", "")
        sub = 0
        if where and (value.startswith("{") or value.startswith("(")):
            _, thread, level = self._frame(arg(args, "frameId", int))
            value, sub = self._varobj(thread, level, expr, value)
        return {"result": value, "variablesReference": sub}

    def _handle_for(self, what: str, thread: int, level: int) -> int:
        for ref, h in self.handles.items():
            if h == (what, thread, level):
                return ref
        ref = self._new_ref()
        self.handles[ref] = (what, thread, level)
        return ref

    def _new_ref(self) -> int:
        ref = self.next_handle
        self.next_handle += 1
        return ref

    def _frame(self, ref: int) -> tuple[str, int, int]:
        self._session()
        h = self.handles.get(ref)
        if h is None or h[0] != "frame":
            raise RequestError(f"no frame {ref} (frames last until the program moves)")
        return h

    # ----- det's schedule

    def do_detSchedule(self, req: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
        """The trace's events around the position (or `around`): det's timeline for an extension."""
        s = self._session()
        around = arg(args, "around", int, s.position.event if s.position.event is not None else 0)
        return self.schedule(around, arg(args, "before", int, SCHEDULE_WINDOW), arg(args, "after", int,
                                                                                   SCHEDULE_WINDOW))

    def schedule(self, around: int | None, before: int, after: int) -> dict[str, Any]:
        m = self.model
        if before < 0 or after < 0:
            raise RequestError("before and after are counts of events")
        at = min(around if around is not None else m.seq0, m.last_seq + 1)
        lo, hi = max(m.seq0, at - before), min(m.last_seq, at + after)
        rows = []
        for e in m.tr.events_between(lo, hi + 1):
            loc = m.location(e)
            row: dict[str, Any] = {"event": e.seq, "thread": f"T{e.tid}", "kind": e.name,
                                   "object": m.object_label(e.obj), "current": e.seq == at}
            if loc is not None and loc.file and loc.line:
                row["source"] = {"name": os.path.basename(loc.file), "path": loc.file}
                row["line"] = loc.line
            rows.append(row)
        pos = self.session.position if self.session is not None else None
        return {"position": pos.event if pos else None, "thread": f"T{pos.thread}" if pos and
                pos.thread is not None else None, "first": m.seq0, "last": m.last_seq, "events": rows}

    def _event_words(self, e: Any) -> str:
        obj = self.model.object_label(e.obj)
        return f"T{e.tid} {e.name}" + (f" {obj}" if obj else "")


def serve(reader: Callable[[], dict[str, Any] | None], out: Writer) -> None:
    """Read requests until disconnect or the end of input."""
    a = Adapter(out)
    while not a.done.is_set():
        msg = reader()
        if msg is None:
            break
        a.take(msg)
        if msg.get("command") == "disconnect":
            break
    a.finish()
    deadline = time.monotonic() + 5
    while a.worker.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
