/*
 * preload/sysv.c - System V semaphores and shared memory, and the ids of
 * all System V objects (msgsnd and msgrcv are in msgqueues.c): the kernel
 * picks an id anew each run, and the objects are shared with other
 * processes and outlive the recording.
 *
 * Rules of this file:
 *  - Those of preload/inputs.c, which holds what every input wrapper shares
 *    (preload/inputs.h): this file is one source of inputs, split out of it.
 *  - A get's id is an input: the program sees the recorded id in replay.
 *    Replay makes no semaphore set or queue: semop, semctl and msgctl are
 *    inputs (their results, and what they wrote), not performed, like a
 *    queue's messages; semop is a hand-off besides (sem_release). A
 *    segment's memory is the program's own, so replay makes a private
 *    segment of the recorded size at the get, attaches it
 *    once and marks it removed (Linux still lets shmat attach it, and it
 *    goes when the last process detaches: nothing is left on the machine);
 *    shmat attaches that one for the recorded id (forked children inherit
 *    both the attachment and the map). shmctl is an input too.
 */
#include "inputs.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

enum { SYSV_SEM = 0, SYSV_SHM = 1, SYSV_MSG = 2 };

/* replay: recorded segment id -> this run's stand-in */
#define SHM_MAX 64
static struct {
	int rec, live;
} shm_map[SHM_MAX];
static int shm_mapped;
static _Atomic int shm_lock;

static int shm_live(int rec)
{
	int live = rec;
	det_spin_lock(&shm_lock);
	for (int i = 0; i < shm_mapped; i++)
		if (shm_map[i].rec == rec)
			live = shm_map[i].live;
	det_spin_unlock(&shm_lock);
	return live;
}

static void shm_stand_in(int rec, uint64_t size)
{
	int live = real.shmget(IPC_PRIVATE, size ? size : 1, IPC_CREAT | 0600);
	if (live < 0)
		det_fatal("replay cannot make a shared memory segment of %llu bytes for recorded id %d: %s",
			  (unsigned long long)size, rec, strerror(errno));
	if (real.shmat(live, NULL, SHM_RDONLY) == (void *)-1 || real.shmctl(live, IPC_RMID, NULL) != 0)
		det_fatal("replay cannot hold its stand-in for shared memory segment %d: %s", rec, strerror(errno));
	det_spin_lock(&shm_lock);
	if (shm_mapped == SHM_MAX)
		det_fatal("more than %d System V shared memory segments", SHM_MAX);
	shm_map[shm_mapped].rec = rec;
	shm_map[shm_mapped++].live = live;
	det_spin_unlock(&shm_lock);
}

/* A call whose result, and the len bytes it wrote at buf when ok, are the
 * input; `call` runs only when recording (blocking: may wait). */
#define SYSV_INPUT(kind, aux, buf, len, call, ok, blocking)                                       \
	do {                                                                                       \
		struct det_thread *t = det_enter();                                                \
		if (!t)                                                                            \
			return call;                                                               \
		struct det_op op = {0};                                                            \
		int64_t res;                                                                       \
		if (det_input_begin(&op, t, kind, aux, DET_RA())) {                                \
			res = op.rec->result;                                                      \
			if (op.rec->data_len && op.rec->data_len <= (len))                         \
				memcpy(buf, det_replay_data(op.rec), op.rec->data_len);            \
			det_input_end(&op, res, NULL, 0);                                          \
		} else {                                                                           \
			res = res_of((blocking) ? BLOCKING(&op, call) : (call));                   \
			det_input_end(&op, res, buf, (ok) ? (uint32_t)(len) : 0);                  \
		}                                                                                  \
		det_leave(t);                                                                      \
		return ret_of(res);                                                                \
	} while (0)

DET_IMPL int det_impl_semget(key_t key, int n, int flags)
{
	char none;
	SYSV_INPUT(DET_EV_SYSV_GET, SYSV_SEM, &none, 0, real.semget(key, n, flags), 0, 0);
}

DET_IMPL int det_impl_msgget(key_t key, int flags)
{
	char none;
	SYSV_INPUT(DET_EV_SYSV_GET, SYSV_MSG, &none, 0, real.msgget(key, flags), 0, 0);
}

DET_IMPL int det_impl_shmget(key_t key, size_t size, int flags)
{
	struct det_thread *t = det_enter();
	if (!t)
		return real.shmget(key, size, flags);
	struct det_op op = {0};
	int64_t res;
	uint64_t got = 0; /* the segment's size: the program may have asked with 0 */
	if (det_input_begin(&op, t, DET_EV_SYSV_GET, SYSV_SHM, DET_RA())) {
		res = op.rec->result;
		if (res >= 0 && op.rec->data_len == sizeof(got))
			memcpy(&got, det_replay_data(op.rec), sizeof(got));
		if (res >= 0)
			shm_stand_in((int)res, got);
		det_input_end(&op, res, NULL, 0);
	} else {
		res = res_of(real.shmget(key, size, flags));
		struct shmid_ds ds;
		if (res >= 0 && real.shmctl((int)res, IPC_STAT, &ds) == 0)
			got = ds.shm_segsz;
		det_input_end(&op, res, &got, res >= 0 ? sizeof(got) : 0);
	}
	det_leave(t);
	return (int)ret_of(res);
}

/* Whether it attached is an input: replay's stand-in stays attachable after
 * IPC_RMID (det holds it attached), where the recording's segment was gone. */
DET_IMPL void *det_impl_shmat(int id, const void *addr, int flags)
{
	struct det_thread *t = det_enter();
	if (!t)
		return real.shmat(det_hdr && det_mode == DET_MODE_REPLAY ? shm_live(id) : id, addr, flags);
	struct det_op op = {0};
	void *p;
	int64_t res;
	if (det_input_begin(&op, t, DET_EV_SHM_ATTACH, 0, DET_RA())) {
		res = op.rec->result;
		p = res < 0 ? (void *)-1 : real.shmat(shm_live(id), addr, flags);
		det_input_end(&op, res, NULL, 0);
	} else {
		p = real.shmat(id, addr, flags);
		res = p == (void *)-1 ? -errno : 0;
		det_input_end(&op, res, NULL, 0);
	}
	det_leave(t);
	if (res < 0)
		errno = (int)-res;
	return p;
}

/*
 * A semaphore set is a lock or a queue between the program's threads (and
 * processes): its operations are hand-offs (include/det/events.h), kept in
 * their recorded order in replay, so a thread let through by another's
 * semop runs after it, and not performed. One that only adds (sem_op > 0
 * in every operation) releases: it takes its place before it runs, as a
 * write does; one that may wait takes its place as it returns.
 */
static int sem_releases(const struct sembuf *ops, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ops[i].sem_op <= 0)
			return 0;
	return n > 0;
}

static int sem_release(int id, struct sembuf *ops, size_t n, const struct timespec *timeout, int timed)
{
	DET_ENTER(t);
	if (!t)
		return timed ? real.semtimedop(id, ops, n, timeout) : real.semop(id, ops, n);
	struct det_op op = {.aux = SYSV_SEM};
	det_acquire_begin(&op, t, DET_EV_SYSV_OP, NULL, DET_OBJ_NONE, DET_RA());
	int64_t res;
	if (det_replaying()) {
		if (op.rec->result == DET_RESULT_PENDING) /* it never returned: killed in it */
			det_ops.replay_vanish(&op);
		res = op.rec->result;
		det_ops.replay_end(&op, res);
	} else {
		det_ops.rec_call_begin(&op);
		res = res_of(timed ? real.semtimedop(id, ops, n, timeout) : real.semop(id, ops, n));
		det_ops.rec_call_end(&op, res);
	}
	det_leave(t);
	return (int)ret_of(res);
}

DET_IMPL int det_impl_semop(int id, struct sembuf *ops, size_t n)
{
	char none;
	if (sem_releases(ops, n))
		return sem_release(id, ops, n, NULL, 0);
	SYSV_INPUT(DET_EV_SYSV_OP, SYSV_SEM, &none, 0, real.semop(id, ops, n), 0, 1);
}

DET_IMPL int det_impl_semtimedop(int id, struct sembuf *ops, size_t n, const struct timespec *timeout)
{
	char none;
	if (sem_releases(ops, n))
		return sem_release(id, ops, n, timeout, 1);
	SYSV_INPUT(DET_EV_SYSV_OP, SYSV_SEM, &none, 0, real.semtimedop(id, ops, n, timeout), 0, 1);
}

/* What a semctl with cmd writes where its fourth argument points, in bytes. */
static size_t semctl_writes(int id, int cmd)
{
	switch (cmd) {
	case IPC_STAT:
	case SEM_STAT:
	case SEM_STAT_ANY:
		return sizeof(struct semid_ds);
	case IPC_INFO:
	case SEM_INFO:
		return sizeof(struct seminfo);
	case GETALL: {
		struct semid_ds ds;
		return real.semctl(id, 0, IPC_STAT, &ds) == 0 ? ds.sem_nsems * sizeof(unsigned short) : 0;
	}
	default:
		return 0;
	}
}

DET_IMPL int det_impl_semctl(int id, int num, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *); /* union semun: a value or a pointer, one register */
	va_end(ap);
	int writes = cmd == IPC_STAT || cmd == SEM_STAT || cmd == SEM_STAT_ANY || cmd == IPC_INFO ||
		     cmd == SEM_INFO || cmd == GETALL;
	size_t len = writes && !(det_hdr && det_mode == DET_MODE_REPLAY) ? semctl_writes(id, cmd) : 0;
	if (det_hdr && det_mode == DET_MODE_REPLAY && writes)
		len = 1 << 20; /* the recorded length, checked below it */
	SYSV_INPUT(DET_EV_SYSV_CTL, SYSV_SEM << 16 | (uint32_t)cmd, arg, len, real.semctl(id, num, cmd, arg),
		   writes && res >= 0 && arg, 1);
}

DET_IMPL int det_impl_shmctl(int id, int cmd, struct shmid_ds *buf)
{
	size_t len = cmd == IPC_STAT || cmd == SHM_STAT || cmd == SHM_STAT_ANY ? sizeof(struct shmid_ds)
		     : cmd == IPC_INFO				       ? sizeof(struct shminfo)
		     : cmd == SHM_INFO				       ? sizeof(struct shm_info)
								       : 0;
	SYSV_INPUT(DET_EV_SYSV_CTL, SYSV_SHM << 16 | (uint32_t)cmd, buf, len, real.shmctl(id, cmd, buf),
		   len && res >= 0 && buf, 0);
}

DET_IMPL int det_impl_msgctl(int id, int cmd, struct msqid_ds *buf)
{
	size_t len = cmd == IPC_STAT || cmd == MSG_STAT || cmd == MSG_STAT_ANY ? sizeof(struct msqid_ds)
		     : cmd == IPC_INFO || cmd == MSG_INFO			 ? sizeof(struct msginfo)
										 : 0;
	SYSV_INPUT(DET_EV_SYSV_CTL, SYSV_MSG << 16 | (uint32_t)cmd, buf, len, real.msgctl(id, cmd, buf),
		   len && res >= 0 && buf, 0);
}
