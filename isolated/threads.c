/*
 * isolated/threads.c - detrun --isolated's threads: each pthread is a
 * process (clone without CLONE_VM, files shared) with a private view of the
 * program's globals and heap (isolated/memory.c), and every pthreads
 * synchronization is a deterministic commit point (DTHREADS, SOSP'11).
 *
 * Rules of this file:
 *  - Rounds. In the parallel phase the running threads run the program's
 *    code, each in its own memory. A thread that reaches a synchronization
 *    call (lock, unlock, condition wait/signal/broadcast, barrier, semaphore
 *    wait/post, create,
 *    join, exit, sched_yield, sleeps) arrives; when no thread runs any more
 *    the serial phase begins: the arrived threads take the turn one after
 *    the other by thread number, and in its turn a thread flushes its
 *    stdio, commits its changed bytes and performs its call. Then every
 *    thread that can go on drops its private pages (sees all the commits)
 *    and the next round runs. This is det's logical-time rule (turn to the
 *    smallest (clock, thread number), replayer/logical.c) with one event per
 *    thread per round: within a round the clocks are equal and the thread
 *    number decides.
 *  - Nothing here depends on real time: which thread waits, wakes, or gets a
 *    lock is decided in the serial phase, from the shared iso_ctl, by the
 *    thread in its turn; waiters are served first come (by turn) first
 *    served. A timed wait (condition, semaphore) times out only when
 *    every thread is blocked.
 *  - The program's memory is written in a thread's turn only before its
 *    commit (stdio flushes): what a call returns to the program is written
 *    after the round, in the thread's next parallel phase.
 *  - Thread slots: 0 is the main thread; a new thread takes the lowest free
 *    slot (and its heap arena). pthread_t is slot + 1.
 *  - Every thread-process is a child of the main one (CLONE_PARENT when a
 *    thread creates one) with the parent-death signal SIGKILL: when the main
 *    thread's process ends, the program ends. exit() in another thread is a
 *    synchronization call that has the main process exit with its status;
 *    a fatal signal in one ends the main one with the same signal.
 */
#include "iso.h"

#include "det/events.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))
#define ISO_EXIT_SIG (SIGRTMAX - 2)

struct iso_ctl *iso_ctl;
int iso_me;
static int in_wait; /* the main process waits in here (safe to flush in its handler) */
static char out_buf[BUFSIZ];
static char alt_stack[64 * 1024]; /* private (det's own data): where write faults are handled */
static struct {
	int slot;
	void *(*fn)(void *);
	void *arg;
} starting; /* the thread being created (the child's copy of it) */
static struct sigaction old_segv;
static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);

void iso_die(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = snprintf(buf, sizeof buf, "%s: ", iso_who);
	n += vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof buf - 2)
		n = (int)sizeof buf - 2;
	buf[n++] = '\n';
	if (write(2, buf, (size_t)n) < 0)
		n = 0;
	if (iso_ctl && iso_ctl->active && iso_me != 0) {
		iso_ctl->exit_code = 125;
		kill(iso_ctl->main_pid, ISO_EXIT_SIG);
	}
	_exit(125);
}

static void ctl_init(void)
{
	if (iso_ctl)
		return;
	void *p = iso_mmap(NULL, sizeof(struct iso_ctl), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		iso_die("cannot map the control block");
	iso_ctl = p;
	iso_ctl->token = -1;
	iso_ctl->main_pid = getpid();
	iso_ctl->th[0].state = T_RUNNING;
}

static void lock_ctl(void)
{
	uint32_t free = 0;
	while (!atomic_compare_exchange_weak(&iso_ctl->lock, &free, 1)) {
		free = 0;
		syscall(SYS_sched_yield); /* (not ours: sched_yield is a commit point) */
	}
}

static void unlock_ctl(void)
{
	atomic_store(&iso_ctl->lock, 0);
}

/* Something changed (the turn, a round, a thread's state): wake the waiters. */
static void bump(void)
{
	atomic_fetch_add(&iso_ctl->seq, 1);
	syscall(SYS_futex, &iso_ctl->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static void wait_change(uint32_t seen)
{
	struct timespec ts = {0, 50 * 1000 * 1000};
	in_wait = 1;
	syscall(SYS_futex, &iso_ctl->seq, FUTEX_WAIT, seen, &ts, NULL, 0);
	in_wait = 0;
}

static void wait_running(int slot)
{
	for (;;) {
		uint32_t seen = atomic_load(&iso_ctl->seq);
		if (iso_ctl->th[slot].state == T_RUNNING)
			return;
		wait_change(seen);
	}
}

/* --- the serial phase ---------------------------------------------------- */

static int next_arrived(int after)
{
	for (int i = after + 1; i < ISO_MAX_THREADS; i++)
		if (iso_ctl->th[i].state == T_ARRIVED)
			return i;
	return -1;
}

static void make_ready(int s, int result)
{
	struct iso_thread *t = &iso_ctl->th[s];
	if (t->state == T_BLOCKED && t->ev_kind) /* woken in another's turn: its call returns */
		iso_ctl->woken[iso_ctl->nwoken++] = s;
	t->state = T_READY;
	t->wait_kind = W_NONE;
	t->result = result;
}

static struct iso_obj *obj(uintptr_t addr, int kind)
{
	struct iso_ctl *c = iso_ctl;
	size_t h = (addr >> 3) * 0x9E3779B97F4A7C15ull % ISO_MAX_OBJS;
	for (size_t k = 0; k < ISO_MAX_OBJS; k++) {
		struct iso_obj *o = &c->objs[(h + k) % ISO_MAX_OBJS];
		if (o->addr == addr)
			return o;
		if (o->addr == 0) {
			o->addr = addr;
			o->kind = kind;
			return o;
		}
	}
	iso_die("more than %d mutexes, condition variables and barriers", ISO_MAX_OBJS);
}

/* The first waiter (by the turn it began to wait) of kind on addr. */
static int first_waiter(int kind, uintptr_t addr)
{
	int best = -1;
	for (int i = 0; i < ISO_MAX_THREADS; i++) {
		struct iso_thread *t = &iso_ctl->th[i];
		if (t->state == T_BLOCKED && t->wait_kind == kind && t->wait_obj == addr &&
		    (best < 0 || t->wait_seq < iso_ctl->th[best].wait_seq))
			best = i;
	}
	return best;
}

static void block(int s, int kind, uintptr_t addr)
{
	struct iso_thread *t = &iso_ctl->th[s];
	t->state = T_BLOCKED;
	t->wait_kind = kind;
	t->wait_obj = addr;
	t->wait_seq = ++iso_ctl->wait_counter;
}

/* Slot s wants the mutex m: it gets it now (ready, result kept) or waits. */
static void want_mutex(int s, uintptr_t m, int result)
{
	struct iso_obj *o = obj(m, O_MUTEX);
	if (o->owner == 0) {
		o->owner = s + 1;
		o->depth = 0;
		make_ready(s, result);
	} else {
		block(s, W_MUTEX, m);
		iso_ctl->th[s].result = result;
	}
}

static void release_mutex(uintptr_t m)
{
	struct iso_obj *o = obj(m, O_MUTEX);
	o->owner = 0;
	int w = first_waiter(W_MUTEX, m);
	if (w >= 0) {
		o->owner = w + 1;
		o->depth = 0;
		make_ready(w, iso_ctl->th[w].result);
	}
}

/* The returns of the calls the turn's call woke (traced), after its own
 * event, in the order they were woken (lock held). */
static void log_woken(void)
{
	struct iso_ctl *c = iso_ctl;
	for (int i = 0; i < c->nwoken; i++) {
		struct iso_thread *t = &c->th[c->woken[i]];
		iso_log_event(c->woken[i], t->ev_kind, t->ev_obj, t->ev_aux, t->result);
		t->ev_kind = 0;
	}
	c->nwoken = 0;
}

/* The serial phase is over (lock held): the next round begins. When no
 * thread could run, a timed wait times out, the first one; else deadlock. */
static void end_round(void)
{
	struct iso_ctl *c = iso_ctl;
	c->token = -1;
	c->round++;
	for (;;) {
		int running = 0, blocked = 0, timed = -1;
		for (int i = 0; i < ISO_MAX_THREADS; i++) {
			struct iso_thread *t = &c->th[i];
			if (t->state == T_READY)
				t->state = T_RUNNING;
			running += t->state == T_RUNNING;
			if (t->state == T_BLOCKED) {
				blocked++;
				if (t->timed && (t->wait_kind == W_COND || t->wait_kind == W_SEM) &&
				    (timed < 0 || t->wait_seq < c->th[timed].wait_seq))
					timed = i;
			}
		}
		if (running || !blocked)
			return;
		if (timed < 0) {
			char msg[200];
			int n = snprintf(msg, sizeof msg, "%s: deadlock: every thread is blocked\n", iso_who);
			if (write(2, msg, (size_t)n) < 0)
				msg[0] = 0;
			c->exit_code = 125;
			kill(c->main_pid, ISO_EXIT_SIG); /* (the others die with it) */
			return;
		}
		c->th[timed].timed = 0;
		if (c->th[timed].wait_kind == W_SEM)
			make_ready(timed, ETIMEDOUT);
		else
			want_mutex(timed, c->th[timed].cond_mutex, ETIMEDOUT);
		log_woken(); /* (before any thread runs again) */
	}
}

/* The serial phase starts when no thread runs (lock held). */
static void maybe_serial(void)
{
	struct iso_ctl *c = iso_ctl;
	if (c->token >= 0)
		return;
	for (int i = 0; i < ISO_MAX_THREADS; i++)
		if (c->th[i].state == T_RUNNING)
			return;
	c->token = next_arrived(-1);
	if (c->token < 0)
		end_round();
	bump();
}

/* A round that does not end for SPIN_HINT_S: a thread runs without calling
 * into pthreads. Either a long computation, or a spin on a flag or an
 * atomic that another thread sets: that never ends here (the other's write
 * is in its private memory until it synchronizes). Said once. */
#define SPIN_HINT_S 10
static void hint_spinner(const struct timespec *t0)
{
	struct timespec now;
	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &now); /* (clock_gettime is an input: trace.c) */
	if (now.tv_sec - t0->tv_sec < SPIN_HINT_S || atomic_exchange(&iso_ctl->hinted, 1))
		return;
	char msg[300];
	int n = snprintf(msg, sizeof msg, "%s: the threads wait %d s for", iso_who, SPIN_HINT_S);
	for (int i = 0; i < ISO_MAX_THREADS; i++)
		if (iso_ctl->th[i].state == T_RUNNING)
			n += snprintf(msg + n, sizeof msg - (size_t)n, " T%d", i);
	n += snprintf(msg + n, sizeof msg - (size_t)n,
		      " to reach a pthreads call; a thread spinning on a flag or an atomic never sees another "
		      "thread's write in isolated mode\n");
	if (write(2, msg, (size_t)(n < (int)sizeof msg ? n : (int)sizeof msg - 1)) < 0)
		return;
}

/* The event this thread's call is when it returns (traced), in its turn
 * (lock held): sync_end logs it then, or make_ready when another thread's
 * turn wakes it. */
static void expect(int kind, uintptr_t o, int64_t aux)
{
	struct iso_thread *t = &iso_ctl->th[iso_me];
	t->ev_kind = kind;
	t->ev_obj = o;
	t->ev_aux = aux;
}

/* A synchronization call begins: wait for the turn, flush, commit. */
static void sync_begin(void)
{
	lock_ctl();
	iso_ctl->th[iso_me].state = T_ARRIVED;
	maybe_serial();
	unlock_ctl();
	struct timespec t0;
	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &t0);
	for (;;) {
		uint32_t seen = atomic_load(&iso_ctl->seq);
		if (iso_ctl->token == iso_me)
			break;
		wait_change(seen);
		hint_spinner(&t0);
	}
	fflush(NULL); /* output in turn order; FILE state written before the commit */
	iso_commit();
}

/* Pass the turn (lock held). */
static void pass_turn(void)
{
	log_woken();
	struct iso_thread *t = &iso_ctl->th[iso_me];
	if (t->state == T_ARRIVED)
		t->state = T_READY;
	int next = next_arrived(iso_me);
	if (next >= 0)
		iso_ctl->token = next;
	else
		end_round();
	bump();
}

static void reap(void)
{
	if (iso_me == 0)
		while (waitpid(-1, NULL, __WCLONE | WNOHANG) > 0)
			;
}

/* The call is done: pass the turn, wait to run again, see the commits. */
static int sync_end(void)
{
	lock_ctl();
	struct iso_thread *t = &iso_ctl->th[iso_me];
	if (t->ev_kind && t->state != T_BLOCKED) { /* it returns in its own turn */
		iso_log_event(iso_me, t->ev_kind, t->ev_obj, t->ev_aux, t->result);
		t->ev_kind = 0;
	}
	pass_turn();
	unlock_ctl();
	wait_running(iso_me);
	iso_update(1);
	reap();
	return iso_ctl->th[iso_me].result;
}

/* --- start, signals, exit ------------------------------------------------ */

static void on_exit_sig(int sig)
{
	(void)sig;
	struct iso_ctl *c = iso_ctl;
	if (c->fatal_signal) {
		signal(c->fatal_signal, SIG_DFL);
		raise(c->fatal_signal);
	}
	if (in_wait)
		fflush(NULL);
	_exit(c->exit_code);
}

static void on_fatal(int sig)
{
	if (iso_me != 0) {
		iso_ctl->fatal_signal = sig;
		kill(iso_ctl->main_pid, ISO_EXIT_SIG);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	ucontext_t *ctx = uc;
	if (si->si_code == SEGV_ACCERR &&
	    iso_region_fault((uintptr_t)si->si_addr, (uintptr_t)ctx->uc_mcontext.gregs[REG_RIP]))
		return;
	if (old_segv.sa_flags & SA_SIGINFO && old_segv.sa_sigaction) {
		old_segv.sa_sigaction(sig, si, uc);
		return;
	}
	if (old_segv.sa_handler != SIG_DFL && old_segv.sa_handler != SIG_IGN) {
		old_segv.sa_handler(sig);
		return;
	}
	on_fatal(sig);
}

static void on_own_stack_too(int sig, void (*handler)(int))
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sa.sa_flags = SA_ONSTACK;
	sigaction(sig, &sa, NULL);
}

static void adopt_private_maps(void);

static void start_isolation(void)
{
	/* stdout's buffer: private to each thread-process, not in the heap */
	fflush(stdout);
	setvbuf(stdout, out_buf, isatty(1) ? _IOLBF : _IOFBF, sizeof out_buf);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK; /* the stack itself is write-protected */
	stack_t alt = {.ss_sp = alt_stack, .ss_size = sizeof alt_stack};
	if (sigaltstack(&alt, NULL) != 0)
		iso_die("cannot set the signal stack");
	sigaction(SIGSEGV, &sa, &old_segv);
	on_own_stack_too(ISO_EXIT_SIG, on_exit_sig);
	static const int fatal[] = {SIGABRT, SIGBUS, SIGFPE, SIGILL};
	for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++) {
		struct sigaction old;
		sigaction(fatal[i], NULL, &old);
		if (old.sa_handler == SIG_DFL)
			on_own_stack_too(fatal[i], on_fatal);
	}
	/* every handler runs on the signal stack: a thread's stack is
	 * write-protected where it has not written it this round, and the
	 * kernel cannot push a signal frame there */
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction old;
		if (sig == SIGSEGV || sigaction(sig, NULL, &old) != 0 || old.sa_handler == SIG_DFL ||
		    old.sa_handler == SIG_IGN || (old.sa_flags & SA_ONSTACK))
			continue;
		old.sa_flags |= SA_ONSTACK;
		sigaction(sig, &old, NULL);
	}
	iso_memory_start();
	adopt_private_maps();
	iso_ctl->active = 1;
}

/* Where glibc keeps this thread's tid (in its struct pthread, at the thread
 * pointer): the kernel writes the new process's tid there (CLONE_CHILD_SETTID),
 * so that raise() and abort() in a thread-process signal itself. */
static int *own_tid(void)
{
	static int *at;
	if (!at) {
		int tid = (int)syscall(SYS_gettid);
		int *self = __builtin_thread_pointer();
		for (int i = 0; i < 1024 && !at; i++)
			if (self[i] == tid)
				at = &self[i];
		if (!at)
			iso_die("cannot find the thread's tid in glibc's thread descriptor");
	}
	return at;
}

static int slot_of(pthread_t t)
{
	unsigned long s = (unsigned long)t;
	if (s < 1 || s > ISO_MAX_THREADS || iso_ctl->th[s - 1].state == T_FREE)
		return -1;
	return (int)s - 1;
}

static void thread_exit(void *ret) __attribute__((noreturn));
static void thread_exit(void *ret)
{
	sync_begin();
	lock_ctl();
	struct iso_thread *t = &iso_ctl->th[iso_me];
	iso_log_event(iso_me, DET_EV_THREAD_EXIT, 0, 0, 0);
	t->retval = ret;
	t->state = T_EXITED;
	int w;
	while ((w = first_waiter(W_JOIN, (uintptr_t)iso_me)) >= 0) {
		t->joined = 1;
		make_ready(w, 0);
	}
	pass_turn();
	unlock_ctl();
	if (iso_me != 0)
		_exit(0);
	/* the main thread's pthread_exit: the program ends with the last thread */
	for (;;) {
		uint32_t seen = atomic_load(&iso_ctl->seq);
		int alive = 0;
		for (int i = 1; i < ISO_MAX_THREADS; i++)
			alive += iso_ctl->th[i].state != T_FREE && iso_ctl->th[i].state != T_EXITED;
		if (!alive)
			exit(0);
		wait_change(seen);
	}
}

static void child_start(int slot, void *(*fn)(void *), void *arg) __attribute__((noreturn));
static void child_start(int slot, void *(*fn)(void *), void *arg)
{
	iso_me = slot;
	iso_trace_thread(iso_ctl->th[slot].tnum);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != iso_ctl->main_pid)
		_exit(0); /* the main process is gone already */
	wait_running(slot);
	iso_update(0); /* the creator's private pages, which it committed */
	iso_heap_reset_arena(slot);
	thread_exit(fn(arg));
}

static int child_entry(void *unused)
{
	(void)unused;
	child_start(starting.slot, starting.fn, starting.arg);
}

/* --- the pthreads calls --------------------------------------------------- */

API int pthread_create(pthread_t *out, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	ctl_init();
	if (!iso_ctl->active)
		start_isolation();
	sync_begin();
	lock_ctl();
	int slot = -1;
	for (int i = 1; i < ISO_MAX_THREADS && slot < 0; i++) {
		struct iso_thread *t = &iso_ctl->th[i];
		if (t->state == T_FREE || (t->state == T_EXITED && (t->joined || t->detached)))
			slot = i;
	}
	if (slot < 0) {
		unlock_ctl();
		iso_die("more than %d threads alive at once", ISO_MAX_THREADS - 1);
	}
	int detached = 0;
	if (attr)
		pthread_attr_getdetachstate(attr, &detached);
	struct iso_thread *t = &iso_ctl->th[slot];
	memset(t, 0, sizeof *t);
	t->state = T_READY;
	t->tnum = ++iso_ctl->created;
	t->detached = detached == PTHREAD_CREATE_DETACHED;
	unlock_ctl();
	/* (no lock held across the clone: the lock word is shared) */
	int flags = CLONE_FILES | CLONE_FS | CLONE_CHILD_SETTID | (iso_me ? CLONE_PARENT : 0);
	starting.slot = slot;
	starting.fn = fn;
	starting.arg = arg;
	long pid = clone(child_entry, iso_stack_top(slot), flags, NULL, NULL, NULL, own_tid());
	lock_ctl();
	if (pid < 0) {
		t->state = T_FREE;
		iso_ctl->th[iso_me].result = EAGAIN;
	} else {
		t->pid = (int)pid;
		iso_ctl->th[iso_me].result = 0;
		iso_log_event(iso_me, DET_EV_THREAD_CREATE, 0, t->tnum, 0);
		iso_log_event(slot, DET_EV_THREAD_START, 0, 0, 0);
	}
	unlock_ctl();
	int rc = sync_end();
	if (rc == 0)
		*out = (pthread_t)(slot + 1);
	return rc;
}

API void pthread_exit(void *ret)
{
	ctl_init();
	if (!iso_ctl->active)
		exit(0); /* the only thread */
	thread_exit(ret);
}

API pthread_t pthread_self(void)
{
	return (pthread_t)(iso_me + 1);
}

API int pthread_join(pthread_t th, void **ret)
{
	ctl_init();
	int s = slot_of(th);
	if (s < 0)
		return ESRCH;
	if (s == iso_me)
		return EDEADLK;
	if (!iso_ctl->active)
		return ESRCH;
	sync_begin();
	lock_ctl();
	struct iso_thread *t = &iso_ctl->th[s];
	expect(DET_EV_THREAD_JOIN, 0, t->tnum);
	if (t->detached || t->joined) {
		iso_ctl->th[iso_me].result = EINVAL;
	} else if (t->state == T_EXITED) {
		t->joined = 1;
		iso_ctl->th[iso_me].result = 0;
	} else {
		block(iso_me, W_JOIN, (uintptr_t)s);
	}
	unlock_ctl();
	int rc = sync_end();
	if (rc == 0 && ret)
		*ret = iso_ctl->th[s].retval;
	return rc;
}

API int pthread_detach(pthread_t th)
{
	ctl_init();
	int s = slot_of(th);
	if (s < 0)
		return ESRCH;
	lock_ctl();
	iso_ctl->th[s].detached = 1;
	unlock_ctl();
	return 0;
}

static int mutex_kind(pthread_mutex_t *m)
{
	return m->__data.__kind & 3; /* glibc: 1 recursive, 2 error checking */
}

/* The lock call in the caller's turn (or alone, before isolation). */
static void lock_op(uintptr_t m, int kind, int try)
{
	struct iso_obj *o = obj(m, O_MUTEX);
	int *result = &iso_ctl->th[iso_me].result;
	if (o->owner == iso_me + 1) {
		if (kind == PTHREAD_MUTEX_RECURSIVE) {
			o->depth++;
			*result = 0;
		} else if (try) {
			*result = EBUSY;
		} else if (kind == PTHREAD_MUTEX_ERRORCHECK) {
			*result = EDEADLK;
		} else {
			iso_die("deadlock: thread T%d locks a mutex it holds", iso_me);
		}
	} else if (o->owner && try) {
		*result = EBUSY;
	} else if (o->owner && !iso_ctl->active) {
		iso_die("deadlock: the only thread locks a mutex held by an exited thread");
	} else {
		want_mutex(iso_me, m, 0);
		if (iso_ctl->active && iso_ctl->th[iso_me].state == T_READY)
			iso_ctl->th[iso_me].state = T_ARRIVED; /* still in its turn */
		else if (!iso_ctl->active)
			iso_ctl->th[iso_me].state = T_RUNNING;
	}
}

static int unlock_op(uintptr_t m, int kind)
{
	struct iso_obj *o = obj(m, O_MUTEX);
	if (o->owner != iso_me + 1)
		return kind == PTHREAD_MUTEX_ERRORCHECK || kind == PTHREAD_MUTEX_RECURSIVE ? EPERM : 0;
	if (o->depth) {
		o->depth--;
		return 0;
	}
	release_mutex(m);
	return 0;
}

/* what: 0 lock, 1 trylock, 2 unlock; kind: glibc's mutex kind (rwlocks
 * and spinlocks are exclusive locks here) */
static int lock_call(uintptr_t m, int kind, int what, int event)
{
	ctl_init();
	int active = iso_ctl->active;
	if (active)
		sync_begin();
	lock_ctl();
	expect(event, m, 0);
	if (what == 2)
		iso_ctl->th[iso_me].result = unlock_op(m, kind);
	else
		lock_op(m, kind, what == 1);
	if (!active) { /* (the only thread: no turns) */
		iso_log_event(iso_me, event, m, 0, iso_ctl->th[iso_me].result);
		iso_ctl->th[iso_me].ev_kind = 0;
	}
	unlock_ctl();
	return active ? sync_end() : iso_ctl->th[iso_me].result;
}

API int pthread_mutex_lock(pthread_mutex_t *m)
{
	return lock_call((uintptr_t)m, mutex_kind(m), 0, DET_EV_MUTEX_LOCK);
}

API int pthread_mutex_trylock(pthread_mutex_t *m)
{
	return lock_call((uintptr_t)m, mutex_kind(m), 1, DET_EV_MUTEX_TRYLOCK);
}

API int pthread_mutex_unlock(pthread_mutex_t *m)
{
	return lock_call((uintptr_t)m, mutex_kind(m), 2, DET_EV_MUTEX_UNLOCK);
}

API int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *ts)
{
	(void)ts; /* (no time in isolated mode: a timed lock waits) */
	return lock_call((uintptr_t)m, mutex_kind(m), 0, DET_EV_MUTEX_TIMEDLOCK);
}

/* Read-write locks: exclusive here (a reader may take it again); correct,
 * with less parallelism than readers sharing it. */
#define RW(name, what, event)                                                                      \
	API int name(pthread_rwlock_t *l)                                                          \
	{                                                                                          \
		return lock_call((uintptr_t)l, PTHREAD_MUTEX_RECURSIVE, what, DET_EV_##event);     \
	}
RW(pthread_rwlock_rdlock, 0, RWLOCK_RDLOCK)
RW(pthread_rwlock_wrlock, 0, RWLOCK_WRLOCK)
RW(pthread_rwlock_tryrdlock, 1, RWLOCK_TRYRDLOCK)
RW(pthread_rwlock_trywrlock, 1, RWLOCK_TRYWRLOCK)
RW(pthread_rwlock_unlock, 2, RWLOCK_UNLOCK)

API int pthread_rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *ts)
{
	(void)ts;
	return lock_call((uintptr_t)l, PTHREAD_MUTEX_RECURSIVE, 0, DET_EV_RWLOCK_TIMEDRDLOCK);
}

API int pthread_rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *ts)
{
	(void)ts;
	return lock_call((uintptr_t)l, PTHREAD_MUTEX_RECURSIVE, 0, DET_EV_RWLOCK_TIMEDWRLOCK);
}

API int pthread_spin_lock(pthread_spinlock_t *l)
{
	return lock_call((uintptr_t)l, PTHREAD_MUTEX_NORMAL, 0, DET_EV_SPIN_LOCK);
}

API int pthread_spin_trylock(pthread_spinlock_t *l)
{
	return lock_call((uintptr_t)l, PTHREAD_MUTEX_NORMAL, 1, DET_EV_SPIN_TRYLOCK);
}

API int pthread_spin_unlock(pthread_spinlock_t *l)
{
	return lock_call((uintptr_t)l, PTHREAD_MUTEX_NORMAL, 2, DET_EV_SPIN_UNLOCK);
}

/* pthread_once: the first caller runs the routine after its turn, the
 * others wait until it has (its end is a commit point: they see what it
 * initialized). */
API int pthread_once(pthread_once_t *once, void (*init)(void))
{
	ctl_init();
	if (!iso_ctl->active) {
		lock_ctl();
		struct iso_obj *o = obj((uintptr_t)once, O_ONCE);
		int run = o->need == 0;
		o->need = 2;
		unlock_ctl();
		if (run)
			init();
		return 0;
	}
	sync_begin();
	lock_ctl();
	struct iso_obj *o = obj((uintptr_t)once, O_ONCE);
	int run = o->need == 0;
	expect(run ? DET_EV_ONCE_INIT : DET_EV_ONCE, (uintptr_t)once, 0);
	if (run)
		o->need = 1; /* running */
	else if (o->need == 1)
		block(iso_me, W_ONCE, (uintptr_t)once);
	iso_ctl->th[iso_me].result = 0;
	unlock_ctl();
	sync_end();
	if (!run)
		return 0;
	init();
	sync_begin();
	lock_ctl();
	o->need = 2;
	expect(DET_EV_ONCE, (uintptr_t)once, 0);
	iso_ctl->th[iso_me].result = 1;
	int w;
	while ((w = first_waiter(W_ONCE, (uintptr_t)once)) >= 0)
		make_ready(w, 0);
	unlock_ctl();
	sync_end();
	return 0;
}

static int cond_wait(pthread_cond_t *c, pthread_mutex_t *m, int timed)
{
	ctl_init();
	if (!iso_ctl->active) {
		if (timed)
			return ETIMEDOUT;
		iso_die("deadlock: the only thread waits on a condition variable");
	}
	sync_begin();
	lock_ctl();
	struct iso_obj *o = obj((uintptr_t)m, O_MUTEX);
	iso_log_event(iso_me, timed ? DET_EV_COND_TIMEDWAIT : DET_EV_COND_WAIT, (uintptr_t)c, (int64_t)(uintptr_t)m, 0);
	expect(DET_EV_COND_WAKE, (uintptr_t)c, (int64_t)(uintptr_t)m);
	if (o->owner != iso_me + 1) {
		iso_ctl->th[iso_me].result = EPERM;
	} else {
		o->depth = 0;
		release_mutex((uintptr_t)m);
		block(iso_me, W_COND, (uintptr_t)c);
		iso_ctl->th[iso_me].cond_mutex = (uintptr_t)m;
		iso_ctl->th[iso_me].timed = timed;
	}
	unlock_ctl();
	return sync_end();
}

API int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	return cond_wait(c, m, 0);
}

API int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *ts)
{
	(void)ts;
	return cond_wait(c, m, 1);
}

API int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk, const struct timespec *ts)
{
	(void)clk;
	(void)ts;
	return cond_wait(c, m, 1);
}

static int cond_wake(pthread_cond_t *c, int all)
{
	ctl_init();
	if (!iso_ctl->active)
		return 0;
	sync_begin();
	lock_ctl();
	expect(all ? DET_EV_COND_BROADCAST : DET_EV_COND_SIGNAL, (uintptr_t)c, 0);
	int w;
	while ((w = first_waiter(W_COND, (uintptr_t)c)) >= 0) {
		iso_ctl->th[w].timed = 0;
		want_mutex(w, iso_ctl->th[w].cond_mutex, 0);
		if (!all)
			break;
	}
	iso_ctl->th[iso_me].result = 0;
	unlock_ctl();
	return sync_end();
}

API int pthread_cond_signal(pthread_cond_t *c)
{
	return cond_wake(c, 0);
}

API int pthread_cond_broadcast(pthread_cond_t *c)
{
	return cond_wake(c, 1);
}

API int pthread_barrier_init(pthread_barrier_t *b, const pthread_barrierattr_t *attr, unsigned count)
{
	(void)attr;
	if (count == 0)
		return EINVAL;
	ctl_init();
	lock_ctl();
	struct iso_obj *o = obj((uintptr_t)b, O_BARRIER);
	o->need = count;
	o->got = 0;
	unlock_ctl();
	return 0;
}

API int pthread_barrier_destroy(pthread_barrier_t *b)
{
	(void)b;
	return 0;
}

API int pthread_barrier_wait(pthread_barrier_t *b)
{
	ctl_init();
	if (!iso_ctl->active) {
		struct iso_obj *o = obj((uintptr_t)b, O_BARRIER);
		if (o->need <= 1)
			return PTHREAD_BARRIER_SERIAL_THREAD;
		iso_die("deadlock: the only thread waits at a barrier for %u", o->need);
	}
	sync_begin();
	lock_ctl();
	struct iso_obj *o = obj((uintptr_t)b, O_BARRIER);
	iso_log_event(iso_me, DET_EV_BARRIER_ARRIVE, (uintptr_t)b, 0, 0);
	expect(DET_EV_BARRIER_DEPART, (uintptr_t)b, 0);
	if (++o->got >= o->need) {
		o->got = 0;
		int w;
		while ((w = first_waiter(W_BARRIER, (uintptr_t)b)) >= 0)
			make_ready(w, 0);
		iso_ctl->th[iso_me].result = PTHREAD_BARRIER_SERIAL_THREAD;
	} else {
		block(iso_me, W_BARRIER, (uintptr_t)b);
	}
	unlock_ctl();
	return sync_end();
}

/* Unnamed semaphores: the count in iso_ctl (the sem_t's own bytes are
 * private memory); waiters served first come first served. */
API int sem_init(sem_t *sem, int pshared, unsigned value)
{
	(void)pshared;
	ctl_init();
	lock_ctl();
	struct iso_obj *o = obj((uintptr_t)sem, O_SEM);
	o->need = value;
	unlock_ctl();
	return 0;
}

API int sem_destroy(sem_t *sem)
{
	(void)sem;
	return 0;
}

API int sem_getvalue(sem_t *sem, int *value)
{
	ctl_init();
	lock_ctl();
	*value = (int)obj((uintptr_t)sem, O_SEM)->need;
	unlock_ctl();
	return 0;
}

/* try: 0 waits, 1 fails at once (EAGAIN), 2 is timed (ETIMEDOUT when all block) */
static int sem_take(sem_t *sem, int try)
{
	ctl_init();
	int active = iso_ctl->active;
	if (active)
		sync_begin();
	lock_ctl();
	struct iso_obj *o = obj((uintptr_t)sem, O_SEM);
	int *result = &iso_ctl->th[iso_me].result;
	*result = 0;
	expect(try == 0 ? DET_EV_SEM_WAIT : try == 1 ? DET_EV_SEM_TRYWAIT : DET_EV_SEM_TIMEDWAIT, (uintptr_t)sem, 0);
	if (o->need > 0)
		o->need--;
	else if (try == 1)
		*result = EAGAIN;
	else if (!active)
		*result = try == 2 ? ETIMEDOUT : EDEADLK;
	else {
		block(iso_me, W_SEM, (uintptr_t)sem);
		iso_ctl->th[iso_me].timed = try == 2;
	}
	if (!active) {
		iso_log_event(iso_me, iso_ctl->th[iso_me].ev_kind, (uintptr_t)sem, 0, *result);
		iso_ctl->th[iso_me].ev_kind = 0;
	}
	unlock_ctl();
	int rc = active ? sync_end() : *result;
	if (rc == EDEADLK)
		iso_die("deadlock: the only thread waits on a semaphore at 0");
	if (rc) {
		errno = rc;
		return -1;
	}
	return 0;
}

API int sem_wait(sem_t *sem)
{
	return sem_take(sem, 0);
}

API int sem_trywait(sem_t *sem)
{
	return sem_take(sem, 1);
}

API int sem_timedwait(sem_t *sem, const struct timespec *ts)
{
	(void)ts;
	return sem_take(sem, 2);
}

API int sem_clockwait(sem_t *sem, clockid_t clk, const struct timespec *ts)
{
	(void)clk;
	(void)ts;
	return sem_take(sem, 2);
}

API int sem_post(sem_t *sem)
{
	ctl_init();
	int active = iso_ctl->active;
	if (active)
		sync_begin();
	lock_ctl();
	expect(DET_EV_SEM_POST, (uintptr_t)sem, 0);
	int w = first_waiter(W_SEM, (uintptr_t)sem);
	if (w >= 0) {
		iso_ctl->th[w].timed = 0;
		make_ready(w, 0);
	} else {
		obj((uintptr_t)sem, O_SEM)->need++;
	}
	iso_ctl->th[iso_me].result = 0;
	if (!active) {
		iso_log_event(iso_me, DET_EV_SEM_POST, (uintptr_t)sem, 0, 0);
		iso_ctl->th[iso_me].ev_kind = 0;
	}
	unlock_ctl();
	if (active)
		sync_end();
	return 0;
}

/* A call with no partner: a commit point all the same (a thread polling a
 * flag with sched_yield or a sleep sees the others' writes). */
static void plain_sync(int event)
{
	ctl_init();
	if (!iso_ctl->active)
		return;
	sync_begin();
	iso_ctl->th[iso_me].result = 0;
	lock_ctl();
	expect(event, 0, 0);
	unlock_ctl();
	sync_end();
}

API int sched_yield(void)
{
	plain_sync(DET_EV_SCHED_YIELD);
	return 0;
}

API int usleep(useconds_t us)
{
	(void)us; /* (time does not pass in isolated mode: a sleep is a commit point) */
	plain_sync(DET_EV_SLEEP);
	return 0;
}

API int nanosleep(const struct timespec *req, struct timespec *rem)
{
	(void)req;
	if (rem)
		rem->tv_sec = rem->tv_nsec = 0;
	plain_sync(DET_EV_SLEEP);
	return 0;
}

/* exit() in a thread other than the main one ends the program in its turn. */
API void exit(int code)
{
	if (iso_ctl && iso_ctl->active && iso_me != 0) {
		sync_begin();
		iso_ctl->exit_code = code & 0xff;
		kill(iso_ctl->main_pid, ISO_EXIT_SIG);
		for (;;)
			pause();
	}
	void (*real)(int) = (void (*)(int))dlsym(RTLD_NEXT, "exit");
	real(code);
	_exit(code);
}

/* --- refused ---------------------------------------------------------------- */

API pid_t fork(void)
{
	if (iso_tracing)
		iso_die("fork() is not recorded in isolated mode (a child's inputs and events would not be in the trace)");
	if (iso_ctl && iso_ctl->active)
		iso_die("fork() after the first thread is not supported (a thread is a process here)");
	return ((pid_t(*)(void))dlsym(RTLD_NEXT, "fork"))();
}

API int pthread_kill(pthread_t th, int sig)
{
	(void)th;
	iso_die("pthread_kill(%d) is not supported: signals between threads", sig);
}

API int pthread_cancel(pthread_t th)
{
	(void)th;
	iso_die("pthread_cancel is not supported");
}

API int sigaction(int sig, const struct sigaction *sa, struct sigaction *old)
{
	if (sa && iso_ctl && iso_ctl->active && sa->sa_handler != SIG_DFL && sa->sa_handler != SIG_IGN)
		iso_die("signal handlers installed after the first thread are not supported (signal %d)", sig);
	if (!real_sigaction)
		real_sigaction = (int (*)(int, const struct sigaction *, struct sigaction *))dlsym(RTLD_NEXT, "sigaction");
	return real_sigaction(sig, sa, old);
}

API sighandler_t signal(int sig, sighandler_t handler)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sa.sa_flags = SA_RESTART;
	if (sigaction(sig, &sa, &old) != 0)
		return SIG_ERR;
	return old.sa_handler;
}

/* The program's writable private mappings made before its first thread
 * (Phoenix's kernels map their input so, and write into it): each becomes
 * isolated memory when the first thread starts (isolated/memory.c), so that
 * the threads share it as they would natively. */
#define MAX_PRIVATE_MAPS 64
static struct {
	uintptr_t start, end;
	size_t readable; /* a file mapping: the bytes up to the end of the file */
	int fd;          /* a file mapping: its file (det's own descriptor), else -1 */
	off_t off;
} private_maps[MAX_PRIVATE_MAPS];

API void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (iso_ctl && iso_ctl->active)
		iso_die("mmap by the program after the first thread is not supported (the mapping would not be shared)");
	void *p = iso_mmap(addr, len, prot, flags, fd, off);
	if (p != MAP_FAILED && (prot & PROT_WRITE) && (flags & MAP_PRIVATE)) {
		struct stat st;
		size_t readable = len;
		if (!(flags & MAP_ANONYMOUS) && fstat(fd, &st) == 0)
			readable = st.st_size <= off ? 0 : (size_t)(st.st_size - off);
		int i = 0;
		while (i < MAX_PRIVATE_MAPS && private_maps[i].end)
			i++;
		if (i == MAX_PRIVATE_MAPS)
			iso_die("more than %d private writable mappings before the first thread", MAX_PRIVATE_MAPS);
		private_maps[i].start = (uintptr_t)p;
		private_maps[i].end = (uintptr_t)p + len;
		private_maps[i].readable = readable;
		private_maps[i].fd = flags & MAP_ANONYMOUS ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 1000);
		private_maps[i].off = off;
	}
	return p;
}

API int munmap(void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr, e = a + len;
	if (iso_ctl && iso_ctl->active && iso_forget_mapping(a, len) < 0)
		iso_die("munmap of part of a mapping made before the first thread is not supported");
	for (int i = 0; i < MAX_PRIVATE_MAPS; i++)
		if (private_maps[i].end && a <= private_maps[i].start && e >= private_maps[i].end) {
			if (private_maps[i].fd >= 0)
				close(private_maps[i].fd);
			private_maps[i].start = private_maps[i].end = 0;
		}
	return (int)syscall(SYS_munmap, addr, len);
}

static void adopt_private_maps(void)
{
	for (int i = 0; i < MAX_PRIVATE_MAPS; i++)
		if (private_maps[i].end)
			iso_adopt_mapping(private_maps[i].start, private_maps[i].end - private_maps[i].start,
					  private_maps[i].readable, private_maps[i].fd, private_maps[i].off);
}

/* --- memory the kernel writes -------------------------------------------------
 * The kernel cannot take the write-protect fault that twins a page: a read()
 * into a read-only isolated page fails with EFAULT. These calls touch the
 * buffer's pages first (a write of each page's first byte, unchanged), which
 * twins them. (stdio reads into a heap buffer through libc's own read, which
 * this cannot see: a limit, docs/DESIGN.md.) */
static void touch(void *buf, size_t len)
{
	if (!iso_ctl || !iso_ctl->active || !len)
		return;
	uintptr_t a = (uintptr_t)buf, end = a + len;
	for (uintptr_t p = a; p < end; p = (p & ~(ISO_PAGE - 1)) + ISO_PAGE) {
		volatile unsigned char *b = (volatile unsigned char *)p;
		*b = *b;
	}
}

/* the calls themselves, for trace.c's iso_traced_read (which records or
 * replays them under detrec --isolated / detreplay) */
struct io_call {
	long nr;
	int fd;
	void *buf;
	size_t len;
	long a4;
	void *a5, *a6;
};

static long do_io(void *ctx)
{
	struct io_call *c = ctx;
	return syscall(c->nr, c->fd, c->buf, c->len, c->a4, c->a5, c->a6);
}

API ssize_t read(int fd, void *buf, size_t len)
{
	touch(buf, len);
	struct io_call c = {SYS_read, fd, buf, len, 0, NULL, NULL};
	return iso_traced_read(DET_EV_READ, fd, buf, len, do_io, &c);
}

API ssize_t pread(int fd, void *buf, size_t len, off_t off)
{
	touch(buf, len);
	struct io_call c = {SYS_pread64, fd, buf, len, (long)off, NULL, NULL};
	return iso_traced_read(DET_EV_READ, fd, buf, len, do_io, &c);
}

API ssize_t pread64(int fd, void *buf, size_t len, off_t off)
{
	return pread(fd, buf, len, off);
}

API ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	touch(buf, len);
	struct io_call c = {SYS_recvfrom, fd, buf, len, flags, NULL, NULL};
	return iso_traced_read(DET_EV_RECV, fd, buf, len, do_io, &c);
}

API ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *from, socklen_t *fromlen)
{
	touch(buf, len);
	if (fromlen)
		touch(from, *fromlen);
	if (iso_tracing == ISO_REPLAY && fromlen)
		*fromlen = 0; /* (the sender's address is not recorded) */
	struct io_call c = {SYS_recvfrom, fd, buf, len, flags, from, fromlen};
	return iso_traced_read(DET_EV_RECV, fd, buf, len, do_io, &c);
}

/* DET_ISOLATED_STATS=1: rounds, commits' page faults and conflicting bytes
 * on stderr when the main thread's process ends (measurements). */
__attribute__((destructor)) static void stats(void)
{
	if (!iso_ctl || iso_me != 0 || !getenv("DET_ISOLATED_STATS"))
		return;
	fprintf(stderr, "isolated: %llu rounds, %llu page twins, %llu conflicting bytes\n",
		(unsigned long long)iso_ctl->round, (unsigned long long)iso_ctl->twins,
		(unsigned long long)iso_ctl->conflicts);
}
