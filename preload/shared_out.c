/*
 * preload/shared_out.c - one lock per stream that several of the program's
 * processes write (a stdout pipe or terminal opened before fork), held
 * across a write's place in the order and the write itself, in record and
 * in replay (docs/DESIGN.md "Output of several processes").
 *
 * Why: a write's place is taken before the call (WRITE) or as it begins
 * (STDIO_WRITE), but which process's bytes reach the shared open file
 * first is decided later, by the kernel. Under the lock the place order is
 * the order the bytes arrived. Replay takes the same lock at the write's
 * turn, before it says the turn is done, and writes under it: the next
 * writer in the order waits for the bytes, not only for the turn.
 *
 * Rules of this file:
 *  - Those of preload/inputs.c (this file serves the write wrappers in
 *    sockets.c and stdio.c).
 *  - Only streams to the outside world (a pipe or terminal the program
 *    was given, detreplay's capture, a device) and only once the program
 *    has more than one process. Not the program's own pipes: their reads
 *    are ordered hand-offs already, and a writer holding the lock while
 *    blocked on a full pipe made another process's writer wait on what
 *    only the program drains (a multiprocessing pool's recording stalled).
 *    A one-process program pays a load and a compare per write; one of
 *    several processes an fstat.
 *  - The locks are process-shared robust recursive mutexes in the region,
 *    keyed by the stream's inode: a process that dies holding one (SIGPIPE
 *    inside the write) does not stop the others, and a signal handler that
 *    writes while its thread holds one goes on.
 */
#include "shared_out.h"
#include "inputs.h"
#include "process.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

#define NOT_A_STREAM 2 /* (a key is odd: fds.c pipe_key) */

_Static_assert(sizeof(((struct det_out_lock *)0)->mutex) >= sizeof(pthread_mutex_t),
	       "struct det_out_lock holds a pthread_mutex_t");

/* fd's stream key, or NOT_A_STREAM (not a stream to the outside). Looked up on every write, not
 * kept per number: a number may name another file by a way det does not
 * see (close_range, a close inside a library), and a stale key would have
 * two streams share a lock (a writer blocked on a full pipe would hold up
 * the writers of another pipe, its readers among them). */
static uint64_t key_of(int fd)
{
	enum fd_class c = fd_class(fd);
	struct stat st;
	if (c == FDC_EXTERNAL && det_sys(SYS_fstat, fd, (long)&st, 0, 0, 0, 0) == 0 &&
	    (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode) || S_ISSOCK(st.st_mode)))
		return pipe_key(&st);
	return NOT_A_STREAM;
}

/* The entry for key, made on first use (its mutex set up by whoever put
 * the key there; the others wait until it is ready). A full table shares
 * its last entry: more waiting, never less order. */
static struct det_out_lock *entry_of(uint64_t key)
{
	uint32_t mask = det_hdr->out_locks_cap - 1;
	struct det_out_lock *l = NULL;
	for (uint32_t i = (uint32_t)det_obj_hash(key) & mask, n = 0; n <= mask; i = (i + 1) & mask, n++) {
		l = det_shm_out_lock(det_hdr, i);
		uint64_t cur = 0;
		if (atomic_compare_exchange_strong(&l->key, &cur, key)) {
			pthread_mutexattr_t a;
			pthread_mutexattr_init(&a);
			pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
			pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
			/* a signal handler may write while its thread holds it */
			pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
			real.pthread_mutex_init((pthread_mutex_t *)(void *)l->mutex, &a);
			pthread_mutexattr_destroy(&a);
			atomic_store(&l->ready, 1);
			return l;
		}
		if (cur == key)
			break;
	}
	while (!atomic_load(&l->ready))
		det_sys(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
	return l;
}

struct det_out_lock *shared_out(int fd)
{
	if (det_likely(nprocs() <= 1))
		return NULL;
	if (det_replaying() ? !det_ops.replay_free_running() : det_strict)
		return NULL;
	uint64_t k = key_of(fd);
	return k == NOT_A_STREAM ? NULL : entry_of(k);
}

void shared_out_lock(struct det_out_lock *l)
{
	pthread_mutex_t *m = (pthread_mutex_t *)(void *)l->mutex;
	if (real.pthread_mutex_lock(m) == EOWNERDEAD) /* its holder died writing */
		pthread_mutex_consistent(m);
}

void shared_out_unlock(struct det_out_lock *l)
{
	real.pthread_mutex_unlock((pthread_mutex_t *)(void *)l->mutex);
}
