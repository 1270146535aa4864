/*
 * preload/signals.c - asynchronous signals and the time-stamp counter.
 *
 * Rules of this file:
 *  - det installs its own entry for every signal the program handles and
 *    keeps the program's handler. An asynchronous signal (a timer, kill from
 *    outside, pthread_kill from another thread) is held until the receiving
 *    thread's next event boundary, recorded there as a SIGNAL event, and the
 *    program's handler runs there: as the thread next calls into det (aux
 *    flag DET_SIG_BEFORE), or, if it arrived while the thread was inside
 *    det, as the thread leaves it. Both are points replay can find again.
 *    One that comes while the thread waits in a blocking call det makes for
 *    it (det_block..det_unblock: a read, a join, a lock, a sleep, sigsuspend;
 *    or a strict-mode wait of det's own, which it ends) is delivered there,
 *    at once, as natively (DET_SIG_BEFORE | DET_SIG_IN_WAIT): replay
 *    delivers it as the thread comes to the wait's next event. One that
 *    comes as the call's system call returns a result is held until the
 *    result is logged (its handler may never return), and kicked into the
 *    wait if libc waits again in the same call.
 *  - A thread that makes no event keeps its signals held; when another one
 *    arrives meanwhile, or KICK_RECORD_MS later (a kick: a one-shot timer
 *    of the thread's own that sends the held signal again, told apart by
 *    its value), all are delivered where the thread is, and recorded as
 *    unanchored (DET_SIG_UNANCHORED). So a loop that waits for a handler's
 *    flag (alarm(1), then compute until it fires) ends. Replay delivers an
 *    unanchored signal KICK_REPLAY_MS after the thread leaves det following
 *    the preceding event, by the same kind of kick, or as the thread next
 *    enters det if that comes first: the loop is there by then, but this
 *    may not be exact.
 *  - Replay ignores real asynchronous signals and delivers each recorded
 *    one at its boundary by calling the handler.
 *  - A handler of a SIGNAL event that returns ends with a SIGNAL_RETURN
 *    event (handler_returned; none in strict mode), ordered like the
 *    others, so the handler's writes come before what followed them in
 *    the recording. One that does not return has none, in both runs.
 *  - Synchronous signals (faults, raise, pthread_kill to oneself, abort)
 *    reproduce by themselves and are delivered at once in both modes.
 *  - A signal the program sends its own process (kill, sigqueue, tgkill:
 *    send_signal) is a SIGNAL_SEND event, ordered before its delivery
 *    (SIGNAL events are ordered too). A sender that does not block it takes
 *    it itself, synchronously; one it blocks goes where the kernel puts it,
 *    and replay delivers it from the trace instead of sending it again.
 *    One to a process outside the program (never one of its processes or
 *    threads: det_pid_of_program) is a SIGNAL_OUT input, not sent in replay.
 *    One that stops another of its processes is a PROC_STOP event, sent in
 *    its place in the order when recording (det_stop_in_order); replay
 *    sends it at the sender's next wait, ptrace request or signal.
 *  - Recording notes how the program dies: while the program has no handler
 *    for a signal that ends it and that a thread brings on itself (a fault,
 *    abort), det keeps an entry of its own for it, which writes into the
 *    thread's slot the signal, the instruction, a fault's address and where
 *    the program called det or a library (note_crash), then restores the
 *    default action and dies of it as natively. Replay installs none (a
 *    debugger would see the fault twice), but for a standby replica
 *    (DET_F_HOLD_FAULTS, detrec --follow --standby): there the entry notes
 *    it the same way and then holds the thread in place for good, so gdb
 *    attaches to the program's state at the fault that ended the
 *    recording (the other threads wait at their next calls into det).
 *    The thread that took such a signal last is the one the program ended
 *    in if it died of it (det_hdr->ran_last: maybe inside a call det
 *    wraps, whose event never completed).
 *  - SIGTRAP's int3 at a trapped atomic (trapped_atomics.c) is handled
 *    first, by det; the program cannot block SIGTRAP then (keep_trap).
 *    Under gdb the trap is ud2's SIGILL (det_trap_sig), the same way.
 *  - rdtsc is trapped (PR_SET_TSC) only when the program's own code contains
 *    the instruction; then each one is a recorded RDTSC input, and det's own
 *    timestamps come from the kernel clock instead.
 */
#include "runtime.h"

#include <errno.h>
#include <linux/futex.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

int det_tsc_trapped;

/* The program's own handlers. */
static struct sigaction prog_act[NSIG];
static _Atomic int prog_set[NSIG];
static int was_unsent(int sig);

uint64_t det_now_slow(void)
{
	struct timespec ts;
	det_sys(SYS_clock_gettime, CLOCK_MONOTONIC, (long)&ts, 0, 0, 0, 0);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int is_fault(int sig, const siginfo_t *info)
{
	return info->si_code > 0 &&
	       (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGTRAP);
}

struct handler_call {
	struct sigaction *a;
	int sig;
	siginfo_t *info;
	void *uc;
};

static void *run_handler(void *p)
{
	struct handler_call *c = p;
	if (c->a->sa_flags & SA_SIGINFO)
		c->a->sa_sigaction(c->sig, c->info, c->uc);
	else
		c->a->sa_handler(c->sig);
	return NULL;
}

/* Run the program's handler as the kernel would have, on the program's
 * stack when det delivers it from its own (stack.c). */
static void call_program(int sig, siginfo_t *info, void *uc)
{
	struct sigaction *a = &prog_act[sig];
	struct handler_call c = {a, sig, info, uc};
	int runs = (a->sa_flags & SA_SIGINFO) ? a->sa_sigaction != NULL
					      : a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN;
	stack_t alt;
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);
	if (runs && (a->sa_flags & SA_ONSTACK) && det_sys(SYS_sigaltstack, 0, (long)&alt, 0, 0, 0, 0) == 0 &&
	    !(alt.ss_flags & (SS_DISABLE | SS_ONSTACK)) &&
	    (here < (uintptr_t)alt.ss_sp || here >= (uintptr_t)alt.ss_sp + alt.ss_size))
		/* det delivers it from elsewhere (held, or replayed): on the
		 * alternate stack it asked for, as the kernel would */
		det_call_on_stack(run_handler, &c, (uintptr_t)alt.ss_sp + alt.ss_size);
	else if (runs)
		det_call_on_program_stack(run_handler, &c);
	if (a->sa_flags & SA_RESETHAND) {
		struct sigaction dfl = {.sa_handler = SIG_DFL};
		a->sa_handler = SIG_DFL;
		a->sa_flags = 0;
		real.sigaction(sig, &dfl, NULL);
	}
}


/*
 * The handler of a SIGNAL event returned (record or replay; the thread goes
 * on in det, depth 1): a SIGNAL_RETURN event, ordered like the others, so
 * that the writes the handler made without a lock (a flag another thread
 * polls) come before the events that followed them in the recording, as
 * the writes a thread makes between two of its events do. The SIGNAL
 * event alone is done before the handler runs. Strict mode needs none: the
 * handler runs in the SIGNAL's turn, which passes on at the thread's next
 * event. A handler that does not return (siglongjmp, exit) has none, in
 * both runs. Replay takes one only where it is next: a trace made before
 * the kind existed has none.
 */
static void handler_returned(struct det_thread *t, int sig)
{
	struct det_op op = {0};
	t->depth = 1;
	if (det_hdr->flags & DET_F_STRICT)
		return; /* a strict trace has none: and asking for the next kind in replay would deliver the
			 * next recorded signal now, before the program's code that ran between the two */
	if (det_replaying()) {
		/* (signals_first: a signal recorded before it is delivered first) */
		if (det_ops.replay_next_kind(t, DET_EV_SIGNAL_RETURN) != DET_EV_SIGNAL_RETURN)
			return;
	}
	det_input_begin(&op, t, DET_EV_SIGNAL_RETURN, (uint32_t)sig, 0);
	det_input_end(&op, 0, NULL, 0);
}

/* The SIGNAL event: the payload is the sender's pid and uid and the value. */
struct sig_data {
	int32_t pid, uid;
	int64_t value;
};

/* The mask a handler of sig runs with, as the kernel sets it: the thread's
 * own (prog), the handler's sa_mask, and sig itself unless SA_NODEFER. */
static void handler_mask(int sig, const sigset_t *prog, sigset_t *out)
{
	const struct sigaction *a = &prog_act[sig];
	sigorset(out, prog, &a->sa_mask);
	if (!(a->sa_flags & SA_NODEFER))
		sigaddset(out, sig);
}

/* prog: the thread's mask when det delivers a held signal with all blocked
 * (the handler runs with handler_mask, so a signal can interrupt it, as
 * natively: a SIGUSR2 handler nested in a SIGUSR1 handler that waits for
 * it), then all blocked again; NULL: in a signal's entry, whose mask the
 * kernel set. */
static void record_and_deliver(struct det_thread *t, int sig, uint32_t where, siginfo_t *info, void *uc,
			       const sigset_t *prog)
{
	struct det_op op = {0};
	t->depth = 1;
	det_input_begin(&op, t, DET_EV_SIGNAL, (uint32_t)sig | where, 0);
	struct sig_data d = {info->si_pid, (int32_t)info->si_uid, (int64_t)(intptr_t)info->si_value.sival_ptr};
	det_input_end(&op, info->si_code, &d, sizeof(d));
	t->depth = 0;
	sigset_t during, all;
	if (prog) {
		handler_mask(sig, prog, &during);
		det_sys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&during, 0, _NSIG / 8, 0, 0);
	}
	call_program(sig, info, uc);
	if (prog) {
		sigfillset(&all);
		det_sys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, 0, _NSIG / 8, 0, 0);
	}
	handler_returned(t, sig);
}

/* ------------------------------------------------------------------ */
/* rdtsc */

static int emulate_tsc(struct det_thread *t, ucontext_t *uc)
{
	greg_t *g = uc->uc_mcontext.gregs;
	const uint8_t *ip = (const uint8_t *)g[REG_RIP];
	int len;
	if (ip[0] == 0x0f && ip[1] == 0x31)
		len = 2;
	else if (ip[0] == 0x0f && ip[1] == 0x01 && ip[2] == 0xf9)
		len = 3;
	else
		return 0;
	uint64_t v = 0;
	if (!det_replaying() || !t->active || t->depth) {
		/* read the real counter: let this thread read it for a moment */
		det_sys(SYS_prctl, PR_SET_TSC, PR_TSC_ENABLE, 0, 0, 0, 0);
		v = __builtin_ia32_rdtsc();
		det_sys(SYS_prctl, PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0, 0);
	}
	if (t->active && !t->depth) {
		struct det_op op = {0};
		t->depth = 1;
		if (det_input_begin(&op, t, DET_EV_RDTSC, len == 3, (uint64_t)(uintptr_t)ip))
			v = (uint64_t)op.rec->result;
		det_input_end(&op, (int64_t)v, NULL, 0);
		t->depth = 0;
	}
	g[REG_RAX] = (greg_t)(v & 0xffffffffu);
	g[REG_RDX] = (greg_t)(v >> 32);
	if (len == 3)
		g[REG_RCX] = 0; /* IA32_TSC_AUX: det reports CPU 0 */
	g[REG_RIP] += len;
	return 1;
}

static void hold(struct det_thread *t, int sig, siginfo_t *info);
static int wait_call_returned(const void *ucv);
static void deliver_held(struct det_thread *t, uint32_t where, const sigset_t *prog);
static void deliver_in_wait(struct det_thread *t, int sig, siginfo_t *info, void *uc);
static void deliver_held_in_wait(struct det_thread *t);
static void replay_next_signal(struct det_thread *t);

/* ------------------------------------------------------------------ */
/* kicks: a held signal sent again, after a while, to the thread itself */

#define KICK_RECORD_MS 50
#define KICK_REPLAY_MS 10
static const char kick_cookie; /* its address is a kick's si_value */

static int is_kick(const siginfo_t *info)
{
	return info->si_code == SI_TIMER && info->si_value.sival_ptr == (void *)&kick_cookie;
}

static void kick_cancel(struct det_thread *t)
{
	if (t->kick_armed) {
		det_sys(SYS_timer_delete, t->kick_timer, 0, 0, 0, 0, 0);
		t->kick_armed = 0;
	}
}

/* Send sig to this thread in ms milliseconds (one kick at a time). */
static void kick_arm(struct det_thread *t, int sig, long ms)
{
	kick_cancel(t);
	struct sigevent ev;
	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = sig;
	ev.sigev_value.sival_ptr = (void *)&kick_cookie;
	ev._sigev_un._tid = (pid_t)det_sys(SYS_gettid, 0, 0, 0, 0, 0, 0);
	int id;
	if (det_sys(SYS_timer_create, CLOCK_MONOTONIC, (long)&ev, (long)&id, 0, 0, 0) != 0)
		return; /* then only another signal or the next event delivers */
	struct itimerspec when = {.it_value = {ms / 1000, (ms % 1000) * 1000000}};
	if (det_sys(SYS_timer_settime, id, 0, (long)&when, 0, 0, 0) != 0) {
		det_sys(SYS_timer_delete, id, 0, 0, 0, 0, 0);
		return;
	}
	t->kick_timer = id;
	t->kick_armed = 1;
}

/* Replay: t's next event, if it is a signal recorded as unanchored. */
static const struct det_sched *unanchored_next(struct det_thread *t)
{
	const struct det_sched *e = t->idx < t->sched_count ? det_sched_at(t, t->idx) : NULL;
	return e && e->kind == DET_EV_SIGNAL && (e->aux & DET_SIG_UNANCHORED) ? e : NULL;
}

/* Replay: deliver an unanchored signal where the thread is a moment from
 * now (kicked()); does nothing when the next event is not one. */
static int kick_for_unanchored(struct det_thread *t)
{
	const struct det_sched *e = unanchored_next(t);
	if (e)
		kick_arm(t, (int)(e->aux & DET_SIG_NUMBER), KICK_REPLAY_MS);
	return e != NULL;
}

/* A kick arrived: deliver what it was sent for, if that is still due. */
static void kicked(struct det_thread *t, void *ucv)
{
	t->kick_armed = 0; /* one-shot: spent */
	det_sys(SYS_timer_delete, t->kick_timer, 0, 0, 0, 0, 0);
	if (!det_replaying() && t->active && t->wait_op && t->nsigs && !wait_call_returned(ucv)) {
		deliver_held_in_wait(t); /* held as a call returned, and it waits again */
		return;
	}
	if (!t->active || t->depth)
		return; /* inside det: its signals go as it leaves */
	if (det_replaying()) {
		if (unanchored_next(t)) {
			replay_next_signal(t);
			t->depth = 0;
			kick_for_unanchored(t); /* the next one too, if it came before the thread's next call */
		}
		return;
	}
	if (t->sigs_held && t->nsigs) {
		t->depth = 1;
		deliver_held(t, DET_SIG_UNANCHORED, NULL);
		t->depth = 0;
	}
}

/* Sent by the kernel for a write the program made, or by abort(), whose
 * raise is libc's own call, past det's: both reproduce by themselves. (A
 * SIGABRT another thread sends with pthread_kill looks the same; it is
 * delivered at once too.) */
static int self_inflicted(int sig, const siginfo_t *info)
{
	int code = sig == SIGABRT ? SI_TKILL : SI_USER;
	return (sig == SIGPIPE || sig == SIGXFSZ || sig == SIGABRT) && info->si_code == code &&
	       info->si_pid == (pid_t)det_sys(SYS_getpid, 0, 0, 0, 0, 0, 0);
}

/* ------------------------------------------------------------------ */
/* how the program dies */

/* A signal whose default action ends the program, which recording watches
 * while the program has no handler for it. */
static int fatal_sig(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGABRT || sig == SIGSYS;
}

static int watch_fatal(int sig)
{
	return det_mode == DET_MODE_RECORD && fatal_sig(sig);
}

/* A standby replica's (DET_F_HOLD_FAULTS): the same signals, held for gdb
 * before the replica dies of them as the program did. */
static int hold_fatal(int sig)
{
	return det_mode == DET_MODE_REPLAY && det_hdr && (det_hdr->flags & DET_F_HOLD_FAULTS) && fatal_sig(sig);
}

/* The program's own code: its executable's executable segments. */
#define PROG_TEXT_MAX 4
static uintptr_t prog_text[PROG_TEXT_MAX][2];
static int prog_texts;

static int find_prog_text(struct dl_phdr_info *info, size_t size, void *unused)
{
	(void)size;
	(void)unused;
	for (int i = 0; i < info->dlpi_phnum && prog_texts < PROG_TEXT_MAX; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			prog_text[prog_texts][0] = info->dlpi_addr + ph->p_vaddr;
			prog_text[prog_texts][1] = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
			prog_texts++;
		}
	}
	return 1; /* the first object is the executable */
}

static int in_prog_text(uintptr_t a, uintptr_t before)
{
	for (int i = 0; i < prog_texts; i++)
		if (a >= prog_text[i][0] + before && a < prog_text[i][1])
			return 1;
	return 0;
}

/* a is a return address: the bytes before it are a call (rel32, or
 * indirect through a register or memory, with or without a displacement) */
static int after_call(uintptr_t a)
{
	if (!in_prog_text(a, 7))
		return 0;
	const uint8_t *p = (const uint8_t *)a;
	if (p[-5] == 0xe8)
		return 1;
	for (int len = 2; len <= 7; len++)
		if (p[-len] == 0xff && (p[-len + 1] & 0x38) == 0x10)
			return 1;
	return 0;
}

/* The first return address into the program's code on the stack from sp
 * up, read with process_vm_readv: a word past the stack's end is an error
 * to it, not a second fault. 0: none within 32 KiB. */
static uint64_t program_caller(uintptr_t sp)
{
	uintptr_t buf[64];
	long pid = det_sys(SYS_getpid, 0, 0, 0, 0, 0, 0);
	for (uintptr_t at = sp & ~(uintptr_t)7; at < (sp & ~(uintptr_t)7) + 32768; at += sizeof(buf)) {
		struct iovec local = {buf, sizeof(buf)}, remote = {(void *)at, sizeof(buf)};
		long got = det_sys(SYS_process_vm_readv, pid, (long)&local, 1, (long)&remote, 1, 0);
		if (got <= 0)
			return 0;
		for (long i = 0; i < got / (long)sizeof(uintptr_t); i++)
			if (after_call(buf[i]))
				return buf[i];
	}
	return 0;
}

static __thread int noting __attribute__((tls_model("initial-exec")));

static void note_crash(struct det_thread *t, int sig, const siginfo_t *info, void *ucv)
{
	struct det_slot *sl = t->slot;
	if (!sl || atomic_load(&sl->crash_sig) || noting++)
		return; /* (a fault while noting one: the program dies of it unnoted) */
	const greg_t *g = ((ucontext_t *)ucv)->uc_mcontext.gregs;
	uintptr_t sp = (uintptr_t)g[REG_RSP];
	int in_det = det_stk.hi && sp >= det_stk.lo && sp < det_stk.hi && det_stk.ra;
	sl->crash_code = info->si_code;
	sl->crash_pc = (uint64_t)g[REG_RIP];
	sl->crash_addr = is_fault(sig, info) ? (uint64_t)(uintptr_t)info->si_addr : 0;
	sl->crash_call_ra = in_det ? (uint64_t)det_stk.ra : 0;
	/* the program's entry's stub pushed three words and a pad where its
	 * frames begin on the det stack (det_stk.sp), then called its
	 * implementation: the return address into the stub (preload/stack.c) */
	int entry_ok = in_det && det_stk.sp >= det_stk.lo + 40 && det_stk.sp <= det_stk.hi;
	sl->crash_entry = entry_ok ? *(const uint64_t *)(det_stk.sp - 40) : 0;
	sl->crash_caller = program_caller(in_det ? det_stk.prog_sp : sp);
	atomic_store(&sl->crash_sig, (uint32_t)sig);
}

/* det's entry for a watched signal the program has no handler for: note
 * it, and die of it with the default action. */
static void die_as_natively(struct det_thread *t, int sig, siginfo_t *info, void *ucv)
{
	if (watch_fatal(sig) || hold_fatal(sig))
		note_crash(t, sig, info, ucv);
	if (hold_fatal(sig)) {
		/* held here for good, the fault's frame under this one: the
		 * other threads go on to their next calls into det, which the
		 * recording does not have, and wait there (the replica ends
		 * the program when its standby time is up) */
		static uint32_t held;
		for (;;)
			det_sys(SYS_futex, (long)&held, FUTEX_WAIT_PRIVATE, 0, 0, 0, 0);
	}
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	real.sigaction(sig, &dfl, NULL);
	if (!is_fault(sig, info)) /* (a fault happens again as the handler returns) */
		det_sys(SYS_tgkill, det_sys(SYS_getpid, 0, 0, 0, 0, 0, 0), det_sys(SYS_gettid, 0, 0, 0, 0, 0, 0),
			sig, 0, 0, 0);
}

/* ------------------------------------------------------------------ */
/* the entry for every handled signal */

static void sig_entry(int sig, siginfo_t *info, void *ucv);

/*
 * A handler on an alternate stack (SA_ONSTACK) that interrupted det's own
 * code: det's frames in use are on the det stack, below where that code
 * was, and the entries the handler makes must go below them (an entry off
 * the det stack starts at its top, or at the free top det_call_on_program_stack
 * set, and wrote over the interrupted call's frames: getppid in a handler
 * of a signal raise sent, write in a handler that interrupted a read). So,
 * for the handler: the free top below the interrupted frames (past the red
 * zone), and every entry counts as nested (stack.c's stub compares its
 * stack pointer with the program's at the last entry).
 */
static void det_sig_entry(int sig, siginfo_t *info, void *ucv)
{
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);
	uintptr_t was = ucv ? (uintptr_t)((ucontext_t *)ucv)->uc_mcontext.gregs[REG_RSP] : 0;
	if (!det_stk.hi || (here >= det_stk.lo && here < det_stk.hi) || was < det_stk.lo || was >= det_stk.hi) {
		sig_entry(sig, info, ucv);
		return;
	}
	uintptr_t free_top = det_stk.sp, prog_sp = det_stk.prog_sp;
	det_stk.sp = (was - 256) & ~(uintptr_t)15;
	det_stk.prog_sp = UINTPTR_MAX;
	sig_entry(sig, info, ucv);
	det_stk.sp = free_top;
	det_stk.prog_sp = prog_sp;
}

static void sig_entry(int sig, siginfo_t *info, void *ucv)
{
	struct det_thread *t = &det_tls;
	int saved = errno;
	if (sig == SIGSEGV && det_tsc_trapped && info->si_code == SI_KERNEL && emulate_tsc(t, ucv)) {
		errno = saved;
		return;
	}
	if (sig == det_trap_sig && det_traps_patched && info->si_code > 0 /* (the kernel's) */ &&
	    (det_atomic_trap(ucv) || det_syscall_trap(ucv))) {
		errno = saved;
		return;
	}
	if (is_kick(info)) {
		kicked(t, ucv);
		errno = saved;
		return;
	}
	if (watch_fatal(sig) && t->active &&
	    (is_fault(sig, info) || (sig == SIGABRT && self_inflicted(sig, info))))
		atomic_store(&det_hdr->ran_last, t->num + 1); /* (the program may die of it in this thread) */
	if (!atomic_load(&prog_set[sig])) {
		/* det's own entry (rdtsc's, a watched signal's) and no program handler */
		die_as_natively(t, sig, info, ucv);
		errno = saved;
		return;
	}
	if (!t->active || is_fault(sig, info) || t->self_signal == sig || (!t->depth && self_inflicted(sig, info))) {
		/* (the kernel's answer to a write the program made outside det,
		 * a stdio buffer flushed to a reader that is gone: it comes
		 * again in replay from the same write, and is handled before
		 * the write returns, as natively) */
		siginfo_t rec;
		if (det_replaying() && info && info->si_code <= 0 && info->si_pid > 0) {
			/* sent by a process (kill, sigqueue, tgkill): the program
			 * knows its sender by the recorded pid */
			rec = *info;
			rec.si_pid = det_pid_to_rec(rec.si_pid);
			info = &rec;
		}
		call_program(sig, info, ucv);
	} else if (det_replaying()) {
		/* the recorded delivery comes from the schedule */
	} else if (t->letting_in && !t->depth) {
		hold(t, sig, info); /* every one the call lets in, for det_signals_at_call */
		t->sigs_held = 1;
	} else if (t->wait_op && !wait_call_returned(ucv)) {
		deliver_in_wait(t, sig, info, ucv);
	} else if (t->depth) {
		hold(t, sig, info);
		t->sig_due = 1; /* as the thread leaves det */
		if (t->wait_op) /* its call returned, but libc may wait again in it (a futex loop): there, a kick */
			kick_arm(t, sig, KICK_RECORD_MS);
		if (det_strict) /* or as a strict-mode wait it is in sees it (det_signals_in_wait) */
			atomic_fetch_add(&t->slot->strict_wake, 1);
	} else if (!t->sigs_held) {
		hold(t, sig, info);
		t->sigs_held = 1; /* as the thread next calls into det, or at the kick */
		kick_arm(t, sig, KICK_RECORD_MS);
	} else {
		/* the thread makes no event while signals pile up (a loop that
		 * waits for a handler's flag): deliver them here, unanchored */
		t->depth = 1;
		hold(t, sig, info);
		deliver_held(t, DET_SIG_UNANCHORED, NULL);
		t->depth = 0;
	}
	errno = saved;
}

/* The thread waited in a call (det_block) and the signal came as that call's
 * system call returned a result: the kernel delivers at the syscall's exit,
 * with the instruction after it next and its result in rax. Then the call
 * is done (a write that a reader took, whose reader's kill this is), and
 * its result must be recorded before the handler runs, which may never
 * return (_exit, longjmp): the signal is held as in det. One that
 * interrupted it says -EINTR, or, to be restarted, has the syscall
 * instruction itself next. */
static int wait_call_returned(const void *ucv)
{
	const greg_t *g = ((const ucontext_t *)ucv)->uc_mcontext.gregs;
	uintptr_t ip = (uintptr_t)g[REG_RIP];
	if ((ip & 0xfff) < 2 || (ip & 0xfff) > 0xffe)
		return 0; /* (the bytes around it may be on another page) */
	const uint8_t *p = (const uint8_t *)ip;
	int after_syscall = p[-2] == 0x0f && p[-1] == 0x05;
	int at_syscall = p[0] == 0x0f && p[1] == 0x05;
	return after_syscall && !at_syscall && g[REG_RAX] != -EINTR;
}

static void hold(struct det_thread *t, int sig, siginfo_t *info)
{
	if (t->nsigs < sizeof(t->sigs) / sizeof(t->sigs[0])) {
		t->sigs[t->nsigs].sig = sig;
		t->sigs[t->nsigs].info = *info;
		t->nsigs++;
	}
}

/* Record and deliver the held signals (called with depth 1; the handlers
 * run with depth 0, so their own calls are recorded; prog: see
 * record_and_deliver). */
static void deliver_held(struct det_thread *t, uint32_t where, const sigset_t *prog)
{
	t->sigs_held = 0;
	kick_cancel(t);
	while (t->nsigs) {
		int sig = t->sigs[0].sig;
		siginfo_t info = t->sigs[0].info;
		t->nsigs--;
		memmove(&t->sigs[0], &t->sigs[1], t->nsigs * sizeof(t->sigs[0]));
		record_and_deliver(t, sig, where, &info, NULL, prog);
	}
	t->depth = 1;
}

/* Record: the signal came while the thread waited in a blocking call det
 * makes for the program (det_block: a read, a join, a lock, a sleep): the
 * kernel interrupted that call, so the handler runs now, as natively, and
 * the call then fails with EINTR or starts again (SA_RESTART), as the
 * kernel decides when this entry returns. Held until the wait ended, a
 * handler that wakes its own thread (the self-pipe trick, a SIGTERM handler
 * that ends the thread main joins) never ran. The thread takes its place
 * again as from a wait (strict: a BLOCK event on each side), so replay
 * delivers it, and any held with it, where the thread next takes a turn:
 * at the wait's own event, before the call's outcome. */
static void deliver_in_wait(struct det_thread *t, int sig, siginfo_t *info, void *uc)
{
	(void)uc; /* (the handler gets none, as from deliver_held: replay has none to give) */
	hold(t, sig, info);
	deliver_held_in_wait(t);
}

static void deliver_held_in_wait(struct det_thread *t)
{
	struct det_op *wait = t->wait_op;
	det_unblock(wait);
	deliver_held(t, DET_SIG_BEFORE | DET_SIG_IN_WAIT, NULL);
	det_block(wait);
}

void det_signals_in_wait(struct det_thread *t)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	deliver_held(t, DET_SIG_BEFORE | DET_SIG_IN_WAIT, &old);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Record: the thread calls into det with signals held for this moment. */
void det_signals_enter(struct det_thread *t)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	deliver_held(t, DET_SIG_BEFORE, &old);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Replay: the thread's next event is a recorded signal: take its turn, then
 * run the program's handler outside det, with the recorded siginfo. */
static void replay_next_signal(struct det_thread *t)
{
	const struct det_sched *e = det_sched_at(t, t->idx);
	int sig = (int)(e->aux & DET_SIG_NUMBER);
	siginfo_t info;
	memset(&info, 0, sizeof(info));
	info.si_signo = sig;
	info.si_code = (int)e->result;
	if (e->data_len == sizeof(struct sig_data)) {
		const struct sig_data *d = det_replay_data(e);
		info.si_pid = d->pid;
		info.si_uid = (uid_t)d->uid;
		info.si_value.sival_ptr = (void *)(intptr_t)d->value;
	}
	struct det_op op = {0};
	t->depth = 1;
	det_input_begin(&op, t, DET_EV_SIGNAL, e->aux, 0);
	det_input_end(&op, 0, NULL, 0);
	t->depth = 0;
	if (sig > 0 && sig < NSIG)
		call_program(sig, &info, NULL);
	handler_returned(t, sig);
	t->depth = 0;
}

/* Called when a thread leaves det with signals to deliver. */
void det_signals_due(struct det_thread *t)
{
	t->sig_due = 0;
	if (det_unlikely(t->cancel_async)) {
		/* replay made its cancellation deferred inside det (enforce.c
		 * cancel_due): asynchronous again, here, outside det, where a
		 * request sent meanwhile acts */
		t->cancel_async = 0;
		pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
	}
	if (det_replaying()) {
		while (t->idx < t->sched_count && det_sched_at(t, t->idx)->kind == DET_EV_SIGNAL &&
		       !(det_sched_at(t, t->idx)->aux & DET_SIG_BEFORE)) {
			if (kick_for_unanchored(t))
				return;
			replay_next_signal(t);
		}
		return;
	}
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	t->depth = 1;
	deliver_held(t, 0, &old);
	t->depth = 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Replay: a thread whose first event is a signal that came before any event
 * of it (a loop waiting for an alarm from the start) gets it by a kick. */
void det_replay_signals_attached(struct det_thread *t)
{
	kick_for_unanchored(t);
}

/*
 * The program made a call that lets signals in, without an event of its own:
 * sigprocmask or pthread_sigmask that may unblock some, raise (its handler's
 * end unblocks those its mask held), a raw system call a signal interrupted
 * (EINTR). The kernel delivered them as it returned, outside det, which held
 * them for the next call into det; natively their handlers have run when the
 * call returns, and programs count on it. Record delivers them here; replay
 * delivers those recorded here at the same call.
 */
void det_signals_at_call(void)
{
	struct det_thread *t = &det_tls;
	if (!t->active || t->depth)
		return;
	if (det_replaying()) {
		/* (one the thread's mask blocks now came at a later call: a
		 * handler's mask held it until the handler's own call returned;
		 * the mask is asked only when such a signal is next) */
		sigset_t mask;
		int asked = 0;
		const struct det_sched *e;
		while (t->idx < t->sched_count && (e = det_sched_at(t, t->idx))->kind == DET_EV_SIGNAL &&
		       (e->aux & DET_SIG_AT_CALL)) {
			if (!asked++)
				real.pthread_sigmask(SIG_BLOCK, NULL, &mask);
			if (sigismember(&mask, (int)(e->aux & DET_SIG_NUMBER)))
				break;
			replay_next_signal(t);
		}
		return;
	}
	if (!t->sigs_held || !t->nsigs)
		return;
	sigset_t all, old;
	sigfillset(&all);
	t->depth = 1;
	real.pthread_sigmask(SIG_BLOCK, &all, &old);
	deliver_held(t, DET_SIG_BEFORE | DET_SIG_AT_CALL, &old);
	real.pthread_sigmask(SIG_SETMASK, &old, NULL);
	t->depth = 0;
}

/* Replay: deliver every recorded signal that is next, wherever anchored
 * (called as the thread enters det, before its next event). */
void det_replay_signals_now(struct det_thread *t)
{
	kick_cancel(t);
	while (t->idx < t->sched_count && det_sched_at(t, t->idx)->kind == DET_EV_SIGNAL)
		replay_next_signal(t);
	t->depth = 1;
}

DET_IMPL int det_impl_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	det_init();
	if (sig <= 0 || sig >= NSIG || sig == SIGKILL || sig == SIGSTOP || !det_mode)
		return real.sigaction(sig, act, old);
	struct sigaction prev = prog_act[sig];
	/* (det's entry standing in for the default action: prog_act says which) */
	int had = atomic_load(&prog_set[sig]);
	if (!act) {
		int r = real.sigaction(sig, NULL, old);
		if (r == 0 && old && (had || old->sa_sigaction == det_sig_entry))
			*old = prev; /* (det's own entry: the program's last word, SIG_DFL at first) */
		return r;
	}
	struct sigaction mine = *act;
	int handled = (act->sa_flags & SA_SIGINFO) ? act->sa_sigaction != NULL
						   : act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN;
	int keep_entry = (sig == SIGSEGV && det_tsc_trapped) || (sig == det_trap_sig && det_traps_patched) ||
			 ((watch_fatal(sig) || hold_fatal(sig)) && act->sa_handler == SIG_DFL);
	if (handled || keep_entry) {
		mine.sa_sigaction = det_sig_entry;
		mine.sa_flags = (act->sa_flags | SA_SIGINFO) & ~SA_RESETHAND;
		if (sig == det_trap_sig && det_traps_patched)
			mine.sa_flags |= SA_NODEFER;
	}
	if (det_traps_patched)
		sigdelset(&mine.sa_mask, det_trap_sig); /* (a trapped atomic in the handler) */
	struct sigaction kernel_old;
	int r = real.sigaction(sig, &mine, &kernel_old);
	if (r != 0)
		return r;
	if (old)
		*old = had || kernel_old.sa_sigaction == det_sig_entry ? prev : kernel_old;
	prog_act[sig] = *act;
	atomic_store(&prog_set[sig], handled);
	return 0;
}

/*
 * Waiting for a signal. A signal held for the thread's next call into det
 * is delivered as this call begins, and then the call returns at once, as
 * if that signal had interrupted it: natively its handler would have run
 * before the program decided to wait. Replay delivers the recorded signals
 * at the same points and never sleeps.
 */
static int det_sigsuspend(const sigset_t *mask, uint64_t ra)
{
	struct det_thread *t = &det_tls;
	int waiting = t->active && t->sigs_held;
	t = det_enter();
	if (!t)
		return (int)det_sys(SYS_rt_sigsuspend, (long)mask, _NSIG / 8, 0, 0, 0, 0);
	struct det_op op = {0};
	int64_t r = -EINTR;
	if (!det_input_begin(&op, t, DET_EV_SIGSUSPEND, (uint32_t)waiting, ra)) {
		if (!waiting) {
			/* One that came while the thread was in det (waiting for
			 * its turn, say) is held for its way out, and the real
			 * call would wait for another: blocked from here until
			 * the call, a signal waits for it as natively. */
			sigset_t all, prev;
			sigfillset(&all);
			det_sys(SYS_rt_sigprocmask, SIG_BLOCK, (long)&all, (long)&prev, _NSIG / 8, 0, 0);
			if (!t->nsigs)
				r = BLOCKING(&op, det_sys(SYS_rt_sigsuspend, (long)mask, _NSIG / 8, 0, 0, 0, 0));
			det_sys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&prev, 0, _NSIG / 8, 0, 0);
		}
		det_input_end(&op, r, NULL, 0);
	} else {
		r = op.rec->result;
		det_input_end(&op, r, NULL, 0);
	}
	det_leave(t);
	errno = (int)-r;
	return -1;
}

/* Trapped atomics (trapped_atomics.c): SIGTRAP is never blocked, a trap
 * while it is would kill the program. */
static const sigset_t *keep_trap(int how, const sigset_t *set, sigset_t *copy)
{
	if (!det_traps_patched || !set || how == SIG_UNBLOCK || !sigismember(set, det_trap_sig))
		return set;
	*copy = *set;
	sigdelset(copy, det_trap_sig);
	return copy;
}

/* sigprocmask or pthread_sigmask: a mask that may unblock signals lets in
 * those pending, whose handlers run before it returns (det_signals_at_call). */
static int set_mask(int (*call)(int, const sigset_t *, sigset_t *), int how, const sigset_t *set, sigset_t *old)
{
	sigset_t copy;
	int lets_in = set && how != SIG_BLOCK && det_mode;
	det_tls.letting_in += lets_in;
	int r = call(how, keep_trap(how, set, &copy), old);
	det_tls.letting_in -= lets_in;
	if (r == 0 && lets_in) {
		int e = errno;
		det_signals_at_call();
		errno = e;
	}
	return r;
}

DET_IMPL int det_impl_sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	return set_mask(real.sigprocmask, how, set, old);
}

DET_IMPL int det_impl_pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	return set_mask(real.pthread_sigmask, how, set, old);
}

/* trapped_atomics.c or trapped_syscalls.c patched code: det's entry takes the trap signal. */
void det_signals_take_traps(void)
{
	struct sigaction a = {.sa_sigaction = det_sig_entry, .sa_flags = SA_SIGINFO | SA_NODEFER};
	sigemptyset(&a.sa_mask);
	real.sigaction(det_trap_sig, &a, NULL);
}

DET_IMPL int det_impl_sigsuspend(const sigset_t *mask)
{
	det_init();
	return det_sigsuspend(mask, DET_RA());
}

DET_IMPL int det_impl_pause(void)
{
	det_init();
	sigset_t cur;
	det_sys(SYS_rt_sigprocmask, SIG_BLOCK, 0, (long)&cur, _NSIG / 8, 0, 0);
	return det_sigsuspend(&cur, DET_RA());
}

/*
 * Taking a signal synchronously (sigwait and its kin): which signal, when,
 * is an input, recorded with its siginfo. Replay returns it; when the
 * program sent it itself (a kill to its own pid, as pbzip2 ends its signal
 * thread), the real one comes in replay too, and is taken here as well, or
 * it would stay pending and hit a thread that unblocks it later.
 */
struct sigwait_data {
	int32_t code, pid, uid, from_program;
	int64_t value;
};

static long sys_sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *timeout)
{
	return det_sys(SYS_rt_sigtimedwait, (long)set, (long)info, (long)timeout, _NSIG / 8, 0, 0);
}

static int det_sigwait(const sigset_t *set, siginfo_t *info, const struct timespec *timeout, uint64_t ra)
{
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	DET_ENTER(t);
	if (!t) {
		long r = sys_sigtimedwait(set, info ? info : &si, timeout);
		return r < 0 ? (errno = (int)-r, -1) : (int)r;
	}
	struct det_op op = {0};
	int64_t r;
	if (!det_input_begin(&op, t, DET_EV_SIGWAIT, 0, ra)) {
		r = BLOCKING(&op, sys_sigtimedwait(set, &si, timeout));
		struct sigwait_data d = {si.si_code, si.si_pid, (int32_t)si.si_uid, 0,
					 (int64_t)(intptr_t)si.si_value.sival_ptr};
		d.from_program = r > 0 && si.si_code <= 0 && det_pid_is_program(si.si_pid);
		det_input_end(&op, r, &d, sizeof(d));
	} else {
		r = op.rec->result;
		if (r > 0 && op.rec->data_len == sizeof(struct sigwait_data)) {
			const struct sigwait_data *d = det_replay_data(op.rec);
			si.si_signo = (int)r;
			si.si_code = d->code;
			si.si_pid = d->pid;
			si.si_uid = (uid_t)d->uid;
			si.si_value.sival_ptr = (void *)(intptr_t)d->value;
			if (d->from_program && !(r < NSIG && was_unsent((int)r))) {
				sigset_t one;
				siginfo_t real_si;
				sigemptyset(&one);
				sigaddset(&one, (int)r);
				while (sys_sigtimedwait(&one, &real_si, NULL) == -EINTR)
					;
			}
		}
		det_input_end(&op, r, NULL, 0);
	}
	det_leave(t);
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	if (info)
		*info = si;
	return (int)r;
}

DET_IMPL int det_impl_sigwait(const sigset_t *set, int *sig)
{
	det_init();
	int r = det_sigwait(set, NULL, NULL, DET_RA());
	if (r < 0)
		return errno;
	*sig = r;
	return 0;
}

DET_IMPL int det_impl_sigwaitinfo(const sigset_t *set, siginfo_t *info)
{
	det_init();
	return det_sigwait(set, info, NULL, DET_RA());
}

DET_IMPL int det_impl_sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *timeout)
{
	det_init();
	return det_sigwait(set, info, timeout, DET_RA());
}

DET_IMPL sighandler_t det_impl_signal(int sig, sighandler_t handler)
{
	struct sigaction act = {.sa_handler = handler, .sa_flags = SA_RESTART}, old;
	sigemptyset(&act.sa_mask);
	if (sigaction(sig, &act, &old) != 0)
		return SIG_ERR;
	return old.sa_handler;
}

/*
 * A signal the program sends its own process (kill, sigqueue) or one of its
 * threads (tgkill), with live ids. When the sending thread does not block
 * it, the thread takes it itself before the call returns, in every mode, as
 * natively when main sends it (the kernel gives main first choice); a
 * worker directs it at itself (tgkill, or SI_QUEUE for sigqueue: the kernel
 * lets only main fake SI_USER), which POSIX allows too, where the kernel
 * would have interrupted main at a moment nothing reproduces. When it blocks
 * it, the kernel hands it to another thread, or keeps it pending for a
 * sigwait or an unblocking, and the recording has that delivery: replay
 * takes it from there and does not send the real one, which would come
 * again somewhere else (a thread that unblocks it after resetting its
 * handler, and dies of it); a sigwait that took it in the recording knows
 * it was not sent (own_unsent). A signal with no handler of the program's
 * is sent in both modes: the kernel acts alone.
 */
static _Atomic uint32_t own_unsent[NSIG];

/* given: a siginfo the program made itself (rt_sigqueueinfo), sent as it is */
static long send_live(pid_t pid, pid_t tid, int sig, int code, union sigval value, const siginfo_t *given)
{
	if (code == SI_QUEUE || given) {
		siginfo_t si;
		if (given) {
			si = *given;
		} else {
			memset(&si, 0, sizeof(si));
			si.si_signo = sig;
			si.si_code = SI_QUEUE;
			si.si_pid = pid;
			si.si_uid = (uid_t)det_sys(SYS_getuid, 0, 0, 0, 0, 0, 0);
			si.si_value = value;
		}
		return tid ? det_sys(SYS_rt_tgsigqueueinfo, pid, tid, sig, (long)&si, 0, 0)
			   : det_sys(SYS_rt_sigqueueinfo, pid, sig, (long)&si, 0, 0, 0);
	}
	return tid ? det_sys(SYS_tgkill, pid, tid, sig, 0, 0, 0) : det_sys(SYS_kill, pid, sig, 0, 0, 0, 0);
}

/* A process outside the program (its shell, a server it pokes): the
 * result is an input, and replay sends nothing, as that process has had
 * its signal, or is gone, or is another by then. */
static int send_outside(pid_t pid, pid_t tid, int sig, int code, union sigval value, const siginfo_t *given,
			uint64_t ra)
{
	struct det_thread *t = det_enter();
	long r;
	if (!t) {
		r = send_live(pid, tid, sig, code, value, given);
	} else {
		struct det_op op = {0};
		if (det_input_begin(&op, t, DET_EV_SIGNAL_OUT, (uint32_t)sig, ra))
			r = op.rec->result;
		else
			r = send_live(pid, tid, sig, code, value, given);
		det_input_end(&op, r, NULL, 0);
		det_leave(t);
	}
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return 0;
}

/*
 * Replay of a stop (PROC_STOP) waits for the sender's next call that can
 * see it: a wait, a ptrace request, a signal. When it was recorded the
 * stop reached the target some time after the call, and the target made
 * the events it had come to meanwhile (a tracee past the attach, at its
 * next sleep); sent at the call's own turn it could stop the target before
 * them, while the wait that saw the stop comes after them in the order:
 * both waited for ever. By the sender's next such call the events before
 * it are done, as recorded. Per thread: a tracer is the thread that
 * attached.
 */
static void stop_now(const struct det_stop *s)
{
	if (s->aux & DET_AUX_PROC_STOP_PTRACE)
		real.ptrace((enum __ptrace_request)(s->aux & 0xffff), s->pid, NULL, NULL);
	else if (s->tid)
		det_sys(SYS_tgkill, s->pid, s->tid, s->aux, 0, 0, 0);
	else
		det_sys(SYS_kill, s->pid, s->aux, 0, 0, 0, 0);
}

void det_stops_send(struct det_thread *t)
{
	for (uint32_t i = 0; i < t->nstops; i++)
		stop_now(&t->stops[i]);
	t->nstops = 0;
}

long det_stop_in_order(uint32_t aux, pid_t pid, pid_t tid, uint64_t ra, long (*call)(void *), void *arg)
{
	struct det_thread *t = det_enter();
	if (!t)
		return call(arg);
	struct det_op op = {0};
	long r;
	if (det_input_begin(&op, t, DET_EV_PROC_STOP, aux, ra)) {
		r = op.rec->result;
		if (r >= 0) {
			if (t->nstops == sizeof(t->stops) / sizeof(t->stops[0]))
				det_stops_send(t);
			t->stops[t->nstops++] = (struct det_stop){aux, pid, tid};
		}
		det_input_end(&op, r, NULL, 0);
	} else {
		det_ops.rec_release_begin(&op); /* (placed before the target stops) */
		r = call(arg);
		det_ops.rec_end(&op, r);
	}
	det_leave(t);
	return r;
}

/* A signal that stops a process whatever it handles: the target is
 * another process, whose dispositions det does not know here. */
static int stopping_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

struct live_send {
	pid_t pid, tid;
	int sig, code;
	union sigval value;
	const siginfo_t *given;
};

static long send_live_call(void *arg)
{
	const struct live_send *s = arg;
	return send_live(s->pid, s->tid, s->sig, s->code, s->value, s->given);
}

static int send_signal(pid_t pid, pid_t tid, int sig, int code, union sigval value, const siginfo_t *given,
		       uint64_t ra)
{
	det_init();
	if (det_unlikely(det_tls.nstops)) /* (replay: the stops it made before this signal) */
		det_stops_send(&det_tls);
	pid_t me = (pid_t)det_sys(SYS_getpid, 0, 0, 0, 0, 0, 0);
	pid_t my_tid = (pid_t)det_sys(SYS_gettid, 0, 0, 0, 0, 0, 0);
	if (pid > 0 && pid != me && !det_pid_of_program(pid) && !(tid && det_pid_of_program(tid)))
		return send_outside(pid, tid, sig, code, value, given, ra);
	if (pid > 0 && pid != me && stopping_signal(sig)) {
		struct live_send s = {pid, tid, sig, code, value, given};
		long r = det_stop_in_order((uint32_t)sig, pid, tid, ra, send_live_call, &s);
		if (r < 0) {
			errno = (int)-r;
			return -1;
		}
		return 0;
	}
	struct det_thread *t = pid == me && sig > 0 && sig < NSIG ? det_enter() : NULL;
	long r = 0;
	int to_me = 0; /* sent below, outside det: the handler's calls are events */
	struct det_op op = {0};
	if (t && !det_input_begin(&op, t, DET_EV_SIGNAL_SEND, (uint32_t)sig, ra))
		det_ops.rec_release_begin(&op); /* in the order before the signal's delivery */
	if (!t) {
		r = send_live(pid, tid, sig, code, value, given);
	} else if (det_replaying() && op.rec->result < 0) {
		r = op.rec->result; /* it failed in the recording: fail the same way */
	} else if (tid && tid != my_tid) {
		r = send_live(pid, tid, sig, code, value, given);
	} else {
		sigset_t cur;
		det_sys(SYS_rt_sigprocmask, SIG_BLOCK, 0, (long)&cur, _NSIG / 8, 0, 0);
		if (!sigismember(&cur, sig))
			to_me = 1;
		else if (det_replaying() && !tid && atomic_load(&prog_set[sig]))
			atomic_fetch_add(&own_unsent[sig], 1);
		else
			r = send_live(pid, tid, sig, code, value, given);
	}
	if (t) {
		if (det_replaying())
			det_input_end(&op, r, NULL, 0);
		else
			det_ops.rec_end(&op, r);
		det_leave(t);
	}
	if (to_me) {
		int prev = t->self_signal;
		t->self_signal = sig;
		r = send_live(pid, tid || my_tid == me ? tid : my_tid, sig, code, value, given);
		t->self_signal = prev;
	}
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return 0;
}

int det_kill_live(pid_t pid, int sig, uint64_t ra)
{
	return send_signal(pid, 0, sig, SI_USER, (union sigval){0}, NULL, ra);
}

int det_sigqueue_live(pid_t pid, int sig, union sigval value, uint64_t ra)
{
	return send_signal(pid, 0, sig, SI_QUEUE, value, NULL, ra);
}

int det_tgkill_live(pid_t tgid, pid_t tid, int sig, uint64_t ra)
{
	return send_signal(tgid, tid, sig, SI_TKILL, (union sigval){0}, NULL, ra);
}

/* tkill: a thread of the program's own process is sent it as by tgkill */
int det_tkill_live(pid_t tid, int sig, uint64_t ra)
{
	pid_t me = (pid_t)det_sys(SYS_getpid, 0, 0, 0, 0, 0, 0);
	if (tid > 0 && (tid == (pid_t)det_sys(SYS_gettid, 0, 0, 0, 0, 0, 0) || det_sys(SYS_tgkill, me, tid, 0, 0, 0, 0) == 0))
		return send_signal(me, tid, sig, SI_TKILL, (union sigval){0}, NULL, ra);
	long r = det_sys(SYS_tkill, tid, sig, 0, 0, 0, 0);
	return r < 0 ? (errno = (int)-r, -1) : 0;
}

/* rt_sigqueueinfo, rt_tgsigqueueinfo (tid 0: to the process): the
 * program's own siginfo */
int det_sigqueueinfo_live(pid_t pid, pid_t tid, int sig, const siginfo_t *info, uint64_t ra)
{
	return send_signal(pid, tid, sig, info->si_code, info->si_value, info, ra);
}

/* Replay: a sigwait takes a signal its own process sent while the recording
 * ran: was the real one left unsent? */
static int was_unsent(int sig)
{
	uint32_t n = atomic_load(&own_unsent[sig]);
	while (n && !atomic_compare_exchange_weak(&own_unsent[sig], &n, n - 1))
		;
	return n != 0;
}

/* Signals a thread sends itself arrive before the call returns, in both
 * modes: deliver them at once instead of from the schedule. */
/* A signal that stops the process (until another sends SIGCONT). */
static int stops_process(int sig)
{
	return sig == SIGSTOP ||
	       ((sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) && prog_act[sig].sa_handler == SIG_DFL);
}

/* A process that stops itself waits for another's SIGCONT: strict recording
 * gives up the turn meanwhile (a BLOCK, as a blocking call's), or it held
 * it until the watchdog took it back; replay takes that BLOCK's turn before
 * it stops (the process that continues it comes after it in the order). */
DET_IMPL int det_impl_raise(int sig)
{
	det_init();
	struct det_thread *t = &det_tls;
	struct det_thread *stopping = stops_process(sig) ? det_enter() : NULL;
	if (stopping && det_replaying())
		det_ops.replay_take_block(stopping);
	else if (stopping)
		det_ops.rec_block(stopping, DET_EV_SIGNAL, 0, DET_RA());
	int prev = t->self_signal;
	t->self_signal = sig;
	int r = real.raise(sig);
	t->self_signal = prev;
	if (stopping && !det_replaying())
		det_ops.rec_unblock(stopping);
	if (stopping)
		det_leave(stopping);
	if (det_mode) {
		int e = errno;
		det_signals_at_call(); /* (one its handler's mask held) */
		errno = e;
	}
	return r;
}

DET_IMPL int det_impl_pthread_sigqueue(pthread_t th, int sig, const union sigval value)
{
	det_init();
	struct det_thread *t = &det_tls;
	if (!pthread_equal(th, pthread_self()))
		return real.pthread_sigqueue(th, sig, value);
	int prev = t->self_signal;
	t->self_signal = sig;
	int r = real.pthread_sigqueue(th, sig, value);
	t->self_signal = prev;
	return r;
}

DET_IMPL int det_impl_pthread_kill(pthread_t th, int sig)
{
	det_init();
	struct det_thread *t = &det_tls;
	if (!pthread_equal(th, pthread_self()))
		return real.pthread_kill(th, sig);
	int prev = t->self_signal;
	t->self_signal = sig;
	int r = real.pthread_kill(th, sig);
	t->self_signal = prev;
	return r;
}

/* ------------------------------------------------------------------ */
/* does the program execute rdtsc itself? */

static int has_tsc_insn(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i++)
		if (p[i] == 0x0f && (p[i + 1] == 0x31 || (i + 2 < n && p[i + 1] == 0x01 && p[i + 2] == 0xf9)))
			return 1;
	return 0;
}

static int skip_module(const char *name)
{
	/* libc, the loader, libdet itself and the vDSO read the counter for
	 * det's and libc's own clocks, not for the program's logic */
	static const char *const trusted[] = {"libc.so", "ld-linux", "libdet.so", "linux-vdso", "libm.so",
					      "libpthread", "libdl.so", "librt.so", "libstdc++", "libgcc_s"};
	for (size_t i = 0; i < sizeof(trusted) / sizeof(trusted[0]); i++)
		if (strstr(name, trusted[i]))
			return 1;
	return 0;
}

static int scan_module(struct dl_phdr_info *info, size_t size, void *found)
{
	(void)size;
	const char *name = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : "";
	if (*name && skip_module(name))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) &&
		    has_tsc_insn((const uint8_t *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz)) {
			*(int *)found = 1;
			return 1;
		}
	}
	return 0;
}

/* Recording (and a standby replica): det's entry for each watched signal
 * still at its default. */
static void watch_fatal_signals(void)
{
	static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGSYS};
	if (!prog_texts)
		dl_iterate_phdr(find_prog_text, NULL);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct sigaction cur;
		if (!(watch_fatal(sigs[i]) || hold_fatal(sigs[i])) || real.sigaction(sigs[i], NULL, &cur) != 0 ||
		    (!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler != SIG_DFL))
			continue;
		if (cur.sa_flags & SA_SIGINFO)
			continue; /* (det's own already: the rdtsc trap) */
		struct sigaction a = {.sa_sigaction = det_sig_entry, .sa_flags = SA_SIGINFO | SA_NODEFER};
		sigemptyset(&a.sa_mask);
		real.sigaction(sigs[i], &a, NULL);
	}
}

void det_signals_init(void)
{
	watch_fatal_signals();
	const char *force = getenv("DET_TRAP_TSC");
	int found = 0;
	if (force && *force)
		found = *force == '1';
	else
		dl_iterate_phdr(scan_module, &found);
	if (!found)
		return;
	if (det_sys(SYS_prctl, PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0, 0) != 0)
		det_fatal("cannot trap rdtsc (PR_SET_TSC): its values would not replay");
	det_tsc_trapped = 1;
	det_hdr->flags |= DET_F_TS_NS;
	struct sigaction a = {.sa_sigaction = det_sig_entry, .sa_flags = SA_SIGINFO | SA_NODEFER};
	sigemptyset(&a.sa_mask);
	real.sigaction(SIGSEGV, &a, NULL);
}
