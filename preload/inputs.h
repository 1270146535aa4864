/*
 * preload/inputs.h - what the input wrappers share (preload/inputs.c and
 * the files of each source: fds, clock, random, reads, sockets, fsmeta,
 * readiness, machine, sleeps, rawsys).
 *
 * Rules of this file:
 *  - Declarations and the smallest helpers only; each definition lives in
 *    the file of the source it belongs to.
 */
#ifndef DET_INPUTS_H
#define DET_INPUTS_H

#include "runtime.h"

#include <sys/stat.h>
#include <sys/syscall.h>

/* --- what an fd is (fds.c) --- */
enum fd_class {
	FDC_UNKNOWN = 0,
	FDC_FILE = 1,     /* regular file: re-read in replay, checked by hash */
	FDC_EXTERNAL = 2, /* socket, terminal, device, someone else's pipe: recorded */
	FDC_INTERNAL = 3, /* a pipe or socketpair the program made, or stdin fed by det: re-read */
	FDC_OTHER = 4,    /* directory, or a bad fd */
	FDC_SOCKET = 5,   /* an external socket: read like EXTERNAL, writes checked not sent */
};

/* The class of fd, decided on first sight (fd_class's comment says how). */
DET_HIDDEN enum fd_class fd_class(int fd);
/* A pipe's or socket pair's key, by inode (both ends share it): odd, one per inode. */
DET_HIDDEN uint64_t pipe_key(const struct stat *st);
/* Set the class of fd (a descriptor that arrived another way: passed over a socket). */
DET_HIDDEN void fd_set_class(int fd, enum fd_class c);
/* Is fd an eventfd the program made (and has not closed)? */
DET_HIDDEN int det_fd_is_eventfd(int fd);
/* Replay: a stand-in for a descriptor from the outside world (a socket pair
 * end whose peer is gone) at the recorded number; -1 if it is taken. */
DET_HIDDEN int stand_in(int want);
/* Give fd the number `want` (replay restores recorded numbers); -1 if held too long. */
DET_HIDDEN int move_fd(int fd, int want);

/* --- reading (reads.c) --- */
/*
 * One read-like call on fd. `perform` does the real call into iov; `exact`
 * re-reads a stream in replay until it has the recorded count.
 */
struct read_call {
	int fd;
	const struct iovec *iov;
	int iovcnt;
	size_t want;
	ssize_t (*perform)(struct read_call *rc);
	off_t off;
	int flags;
};

DET_HIDDEN ssize_t perform_read(struct read_call *rc);
DET_HIDDEN ssize_t det_read(struct det_thread *t, struct read_call *rc, uint64_t ra);
/* Bytes a replayed thread read ahead from a pipe (reads.c read_ahead); a
 * close of its fd drops them (fds.c). */
struct read_stash {
	int fd;
	uint32_t off, len;
	char *buf;
};
extern DET_HIDDEN __thread struct read_stash stash __attribute__((tls_model("initial-exec")));

/* An early action waits for its thread's turn by napping (50 us growing
 * to 1 ms; the timer slack makes shorter pointless), not on the turnstile,
 * which wakes a thread only for its own event. */
#define NAP_FIRST 50000L
static inline void nap_grow(long *ns)
{
	if (*ns < 1000000)
		*ns *= 2;
}

static inline void nap_longer(long *ns)
{
	struct timespec ts = {0, *ns};
	det_sys(SYS_nanosleep, (long)&ts, 0, 0, 0, 0, 0);
	nap_grow(ns);
}

/* --- results, data and their checks (inputs.c; res_of and ret_of are runtime.h's) --- */

DET_HIDDEN uint64_t hash_iov(const struct iovec *iov, int n, size_t len);
DET_HIDDEN __attribute__((noreturn)) void diverge_data(struct det_op *op, const char *what);
/* A regular file read back in replay is not what was recorded: say which. */
DET_HIDDEN __attribute__((noreturn)) void diverge_file(struct det_op *op, int fd, const char *what);
DET_HIDDEN void scatter(const struct iovec *iov, int n, const uint8_t *data, size_t len);
DET_HIDDEN void record_iov(struct det_thread *t, const struct iovec *iov, int n, size_t len);
DET_HIDDEN int same_iov(const struct iovec *iov, int n, const uint8_t *data, size_t len);

#endif /* DET_INPUTS_H */
