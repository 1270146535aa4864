/*
 * tests/programs/process_calls.c CASE - thread and process calls det got
 * wrong (each failed on main, found by a corpus of small programs):
 *   robust     a robust mutex whose owner died: EOWNERDEAD took the lock
 *              (replay took it for a failure: consistent() said EINVAL)
 *   timedlock  pthread_mutex_timedlock and rwlock_timedwrlock on locks
 *              held all along: ETIMEDOUT (strict: waited for ever)
 *   futexargs  futex calls the kernel refuses: a bad address (EFAULT), a
 *              bitset of 0 and a bad timeout (EINVAL) (strict: SIGSEGV, a
 *              wait for ever, a sleep)
 *   stopcont   a child stops itself, the parent waits for it stopped and
 *              continued (strict: the watchdog took the stopped child's
 *              turn, and replay stalled)
 *   settid     set_tid_address returns the caller's thread id, the one
 *              gettid says (replay: the live one)
 *   stopkill   a paused child is stopped, continued, then killed by its
 *              parent, which waits for each (replay: the child, at its last
 *              event, killed itself at once with the signal it died of, and
 *              the parent's waits found it gone, 4 of 5)
 *   shmrmid    shmat of a segment removed while nobody had it attached:
 *              EINVAL (replay attached det's stand-in, which det holds)
 *   pdeathsig  the parent-death signal the program set, and none before
 *              (det's own SIGKILL showed: PR_GET_PDEATHSIG said 9)
 * Prints what it saw; exits 0 when it is what Linux does.
 */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t m;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;

static void *die_holding(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&m);
	return NULL;
}

static struct timespec soon(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 50000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

static void *time_out(void *arg)
{
	(void)arg;
	struct timespec ts = soon();
	int a = pthread_mutex_timedlock(&m, &ts);
	ts = soon();
	int b = pthread_rwlock_timedwrlock(&rw, &ts);
	printf("timedlock %s, timedwrlock %s\n", a == ETIMEDOUT ? "ETIMEDOUT" : "?", b == ETIMEDOUT ? "ETIMEDOUT" : "?");
	return (void *)(long)(a == ETIMEDOUT && b == ETIMEDOUT);
}

static const char *err(long r)
{
	return r == 0 ? "0" : errno == EFAULT ? "EFAULT" : errno == EINVAL ? "EINVAL" : errno == EAGAIN ? "EAGAIN" : "?";
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";
	if (!strcmp(what, "robust")) {
		pthread_mutexattr_t ma;
		pthread_mutexattr_init(&ma);
		pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
		pthread_mutex_init(&m, &ma);
		pthread_t t;
		pthread_create(&t, NULL, die_holding, NULL);
		pthread_join(t, NULL);
		int r1 = pthread_mutex_lock(&m);
		int r2 = pthread_mutex_consistent(&m);
		int r3 = pthread_mutex_unlock(&m);
		printf("lock %s, consistent %d, unlock %d\n", r1 == EOWNERDEAD ? "EOWNERDEAD" : "?", r2, r3);
		return !(r1 == EOWNERDEAD && r2 == 0 && r3 == 0);
	} else if (!strcmp(what, "timedlock")) {
		pthread_mutex_init(&m, NULL);
		pthread_mutex_lock(&m);
		pthread_rwlock_rdlock(&rw);
		pthread_t t;
		void *ok;
		pthread_create(&t, NULL, time_out, NULL);
		pthread_join(t, &ok);
		return !ok;
	} else if (!strcmp(what, "futexargs")) {
		int word = 0;
		struct timespec bad = {0, 2000000000};
		long a = syscall(SYS_futex, (int *)8, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
		const char *ea = err(a);
		long b = syscall(SYS_futex, &word, FUTEX_WAIT_BITSET_PRIVATE, 0, NULL, NULL, 0);
		const char *eb = err(b);
		long c = syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, &bad, NULL, 0);
		const char *ec = err(c);
		long d = syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 1, NULL, NULL, 0);
		printf("bad address %s, bitset 0 %s, bad timeout %s, another value %s\n", ea, eb, ec, err(d));
		return 0;
	} else if (!strcmp(what, "stopcont")) {
		int p[2];
		if (pipe(p))
			return 1;
		pid_t c = fork();
		if (c == 0) {
			char ch;
			raise(SIGSTOP);
			_exit(read(p[0], &ch, 1) == 1 ? 6 : 7);
		}
		siginfo_t si;
		memset(&si, 0, sizeof(si));
		int stopped = waitid(P_PID, c, &si, WSTOPPED) == 0 && si.si_code == CLD_STOPPED;
		kill(c, SIGCONT);
		memset(&si, 0, sizeof(si));
		int continued = waitid(P_PID, c, &si, WCONTINUED) == 0 && si.si_code == CLD_CONTINUED;
		if (write(p[1], "g", 1) != 1)
			return 1;
		memset(&si, 0, sizeof(si));
		int exited = waitid(P_ALL, 0, &si, WEXITED) == 0 && si.si_status == 6;
		printf("stopped %d, continued %d, exited %d\n", stopped, continued, exited);
		return !(stopped && continued && exited);
	} else if (!strcmp(what, "settid")) {
		int dummy;
		long tid = syscall(SYS_set_tid_address, &dummy);
		printf("set_tid_address gives my thread id: %d\n", tid == gettid());
		return tid != gettid();
	} else if (!strcmp(what, "stopkill")) {
		pid_t c = fork();
		if (c == 0) {
			pause();
			_exit(0);
		}
		int st, ok = 1;
		kill(c, SIGSTOP);
		ok &= waitpid(c, &st, WUNTRACED) == c && WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP;
		kill(c, SIGCONT);
		ok &= waitpid(c, &st, WCONTINUED) == c && WIFCONTINUED(st);
		kill(c, SIGINT);
		ok &= waitpid(c, &st, 0) == c && WIFSIGNALED(st) && WTERMSIG(st) == SIGINT;
		printf("stopped, continued and killed: %d\n", ok);
		return !ok;
	} else if (!strcmp(what, "shmrmid")) {
		int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
		shmctl(id, IPC_RMID, NULL);
		void *p = shmat(id, NULL, 0);
		int gone = p == (void *)-1 && errno == EINVAL;
		printf("shmat after IPC_RMID: %s\n", gone ? "EINVAL" : "attached");
		return !gone;
	} else if (!strcmp(what, "pdeathsig")) {
		int before = -1, set = -1, after = -1;
		prctl(PR_GET_PDEATHSIG, &before);
		prctl(PR_SET_PDEATHSIG, SIGUSR1);
		prctl(PR_GET_PDEATHSIG, &set);
		prctl(PR_SET_PDEATHSIG, 0);
		prctl(PR_GET_PDEATHSIG, &after);
		printf("parent-death signal %d, then %d, then %d\n", before, set, after);
		return !(before == 0 && set == SIGUSR1 && after == 0);
	}
	fprintf(stderr, "usage: process_calls robust|timedlock|futexargs|stopcont|settid|stopkill|shmrmid|pdeathsig\n");
	return 2;
}
