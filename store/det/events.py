"""Event and object kinds: GENERATED from include/det/events.def by
tools/gen_events.py. Do not edit; `make check` fails when this copy is stale.
"""

from __future__ import annotations

from typing import NamedTuple


class ObjKind(NamedTuple):
    name: str
    number: int
    description: str


class EventKind(NamedTuple):
    name: str
    number: int
    objkind: str
    role: str
    description: str


OBJKINDS: tuple[ObjKind, ...] = (
    ObjKind('NONE', 0, 'no object'),
    ObjKind('THREAD', 1, 'a thread'),
    ObjKind('MUTEX', 2, 'pthread_mutex_t (std::mutex)'),
    ObjKind('COND', 3, 'pthread_cond_t (std::condition_variable)'),
    ObjKind('RWLOCK', 4, 'pthread_rwlock_t'),
    ObjKind('BARRIER', 5, 'pthread_barrier_t'),
    ObjKind('SEM', 6, 'sem_t: unnamed (sem_init), or named (sem_open: see SEM_OPEN)'),
    ObjKind('SPIN', 7, 'pthread_spinlock_t'),
    ObjKind('ONCE', 8, 'pthread_once_t (std::call_once), or the guard of a C++ function-local static'),
    ObjKind('FILE', 9, 'a stdio FILE'),
    ObjKind('ATOMIC', 10, 'a memory location used by C11/C++ atomics or __sync/__atomic builtins (programs built with det-cc)'),
    ObjKind('OMP_LOCK', 11, 'an OpenMP lock (libgomp): an unnamed or named critical section, the atomic region, an omp_lock_t or omp_nest_lock_t'),
    ObjKind('FUTEX', 12, "a futex word: a lock or wait a program or library builds itself on futex(2) (Rust's std, abseil, LLVM's OpenMP runtime, libgomp)"),
    ObjKind('FLOCK', 13, "a file's advisory locks (flock, lockf, fcntl's record and open-file-description locks): one object per file, shared by the program's processes"),
)

EVENTS: tuple[EventKind, ...] = (
    EventKind('THREAD_CREATE', 1, 'THREAD', 'CREATE', "pthread_create; aux = the new thread's number"),
    EventKind('THREAD_START', 2, 'THREAD', 'START', 'a created thread begins running'),
    EventKind('THREAD_EXIT', 3, 'THREAD', 'EXIT', 'a thread returns from its start routine or calls pthread_exit'),
    EventKind('THREAD_JOIN', 4, 'THREAD', 'JOIN', 'pthread_join returned'),
    EventKind('THREAD_TRYJOIN', 5, 'THREAD', 'JOIN', 'pthread_tryjoin_np returned'),
    EventKind('THREAD_TIMEDJOIN', 6, 'THREAD', 'JOIN', 'pthread_timedjoin_np or pthread_clockjoin_np returned'),
    EventKind('THREAD_DETACH', 7, 'THREAD', 'OTHER', 'pthread_detach'),
    EventKind('THREAD_CANCEL', 8, 'THREAD', 'OTHER', 'pthread_cancel; obj = the thread asked to end; replay does not send the request: the thread ends where its THREAD_CANCELED says (but see its aux ELSEWHERE)'),
    EventKind('THREAD_CANCELED', 9, 'THREAD', 'OTHER', "the thread acted on a cancellation request: its cleanup handlers and its exit follow; obj = the thread; aux = where (see DET_AUX); result = for pthread_testcancel, its calls since the thread's previous event, this one included"),
    EventKind('MUTEX_LOCK', 10, 'MUTEX', 'ACQUIRE', 'pthread_mutex_lock returned'),
    EventKind('MUTEX_TRYLOCK', 11, 'MUTEX', 'ACQUIRE', 'pthread_mutex_trylock returned'),
    EventKind('MUTEX_TIMEDLOCK', 12, 'MUTEX', 'ACQUIRE', 'pthread_mutex_timedlock returned'),
    EventKind('MUTEX_CLOCKLOCK', 13, 'MUTEX', 'ACQUIRE', 'pthread_mutex_clocklock returned'),
    EventKind('MUTEX_UNLOCK', 14, 'MUTEX', 'RELEASE', 'pthread_mutex_unlock'),
    EventKind('MUTEX_DESTROY', 15, 'MUTEX', 'DESTROY', 'pthread_mutex_destroy'),
    EventKind('COND_WAIT', 20, 'COND', 'WAIT', 'pthread_cond_wait releases mutex aux and waits'),
    EventKind('COND_TIMEDWAIT', 21, 'COND', 'WAIT', 'pthread_cond_timedwait releases mutex aux and waits'),
    EventKind('COND_CLOCKWAIT', 22, 'COND', 'WAIT', 'pthread_cond_clockwait releases mutex aux and waits'),
    EventKind('COND_WAKE', 23, 'COND', 'WAKE', 'a condition wait returned holding mutex aux'),
    EventKind('COND_SIGNAL', 24, 'COND', 'SIGNAL', 'pthread_cond_signal'),
    EventKind('COND_BROADCAST', 25, 'COND', 'SIGNAL', 'pthread_cond_broadcast'),
    EventKind('COND_DESTROY', 26, 'COND', 'DESTROY', 'pthread_cond_destroy'),
    EventKind('RWLOCK_RDLOCK', 30, 'RWLOCK', 'ACQUIRE', 'pthread_rwlock_rdlock returned'),
    EventKind('RWLOCK_TRYRDLOCK', 31, 'RWLOCK', 'ACQUIRE', 'pthread_rwlock_tryrdlock returned'),
    EventKind('RWLOCK_TIMEDRDLOCK', 32, 'RWLOCK', 'ACQUIRE', 'pthread_rwlock_timedrdlock returned'),
    EventKind('RWLOCK_CLOCKRDLOCK', 33, 'RWLOCK', 'ACQUIRE', 'pthread_rwlock_clockrdlock returned'),
    EventKind('RWLOCK_WRLOCK', 34, 'RWLOCK', 'ACQUIRE', 'pthread_rwlock_wrlock returned'),
    EventKind('RWLOCK_TRYWRLOCK', 35, 'RWLOCK', 'ACQUIRE', 'pthread_rwlock_trywrlock returned'),
    EventKind('RWLOCK_TIMEDWRLOCK', 36, 'RWLOCK', 'ACQUIRE', 'pthread_rwlock_timedwrlock returned'),
    EventKind('RWLOCK_CLOCKWRLOCK', 37, 'RWLOCK', 'ACQUIRE', 'pthread_rwlock_clockwrlock returned'),
    EventKind('RWLOCK_UNLOCK', 38, 'RWLOCK', 'RELEASE', 'pthread_rwlock_unlock'),
    EventKind('RWLOCK_DESTROY', 39, 'RWLOCK', 'DESTROY', 'pthread_rwlock_destroy'),
    EventKind('BARRIER_ARRIVE', 40, 'BARRIER', 'WAIT', 'pthread_barrier_wait: the thread arrives'),
    EventKind('BARRIER_DEPART', 41, 'BARRIER', 'WAKE', 'pthread_barrier_wait returned (result: PTHREAD_BARRIER_SERIAL_THREAD or 0)'),
    EventKind('BARRIER_DESTROY', 42, 'BARRIER', 'DESTROY', 'pthread_barrier_destroy'),
    EventKind('SEM_WAIT', 45, 'SEM', 'ACQUIRE', 'sem_wait returned'),
    EventKind('SEM_TRYWAIT', 46, 'SEM', 'ACQUIRE', 'sem_trywait returned'),
    EventKind('SEM_TIMEDWAIT', 47, 'SEM', 'ACQUIRE', 'sem_timedwait returned'),
    EventKind('SEM_CLOCKWAIT', 48, 'SEM', 'ACQUIRE', 'sem_clockwait returned'),
    EventKind('SEM_POST', 49, 'SEM', 'RELEASE', 'sem_post'),
    EventKind('SEM_DESTROY', 50, 'SEM', 'DESTROY', 'sem_destroy'),
    EventKind('SEM_OPEN', 59, 'NONE', 'INPUT', "sem_open of a named semaphore, which other processes share and the recording has changed or removed by replay: that semaphore's waits and posts are ordered as ever but not performed in replay (their recorded results return), and replay's sem_open hands out a stand-in; result = 0 or -errno"),
    EventKind('SEM_VALUE', 51, 'NONE', 'INPUT', 'sem_getvalue of a named semaphore (see SEM_OPEN); result = the value, or -errno'),
    EventKind('NAME_UNLINK', 56, 'NONE', 'INPUT', 'sem_unlink, mq_unlink or shm_unlink: a name other processes share, which the recording removed; not removed again in replay; aux = 0 semaphore, 1 message queue, 2 shared memory; result = 0 or -errno'),
    EventKind('SPIN_LOCK', 52, 'SPIN', 'ACQUIRE', 'pthread_spin_lock returned'),
    EventKind('SPIN_TRYLOCK', 53, 'SPIN', 'ACQUIRE', 'pthread_spin_trylock returned'),
    EventKind('SPIN_UNLOCK', 54, 'SPIN', 'RELEASE', 'pthread_spin_unlock'),
    EventKind('SPIN_DESTROY', 55, 'SPIN', 'DESTROY', 'pthread_spin_destroy'),
    EventKind('ONCE', 57, 'ONCE', 'OTHER', 'pthread_once returned; result 1 if this thread ran the init routine'),
    EventKind('ONCE_INIT', 58, 'ONCE', 'OTHER', 'this thread begins the init routine of a pthread_once'),
    EventKind('GUARD_ACQUIRE', 85, 'ONCE', 'OTHER', '__cxa_guard_acquire: result 0, this thread initializes a C++ function-local static (the others wait for it); in strict mode also result 1, a call that found it initialized'),
    EventKind('GUARD_RELEASE', 86, 'ONCE', 'OTHER', '__cxa_guard_release: the static is initialized'),
    EventKind('GUARD_ABORT', 87, 'ONCE', 'OTHER', "__cxa_guard_abort: the static's initializer threw; another call may initialize it"),
    EventKind('STDIO_WRITE', 60, 'FILE', 'OUTPUT', 'a stdio call that writes to a FILE (printf, fputs, fwrite, ...)'),
    EventKind('STDIO_READ', 18, 'FILE', 'OTHER', "a stdio call that reads a FILE (fgets, fread, getc, getline, scanf, ...) in a process that has made a thread: its place among the FILE's users, taken with the FILE's lock held (its buffer refills are read events of their own)"),
    EventKind('FILE_LOCK', 61, 'FILE', 'ACQUIRE', 'flockfile, or ftrylockfile (result nonzero when it failed)'),
    EventKind('FILE_UNLOCK', 62, 'FILE', 'RELEASE', 'funlockfile'),
    EventKind('ATOMIC_LOAD', 70, 'ATOMIC', 'OTHER', 'an atomic load; result = the value read'),
    EventKind('ATOMIC_STORE', 71, 'ATOMIC', 'OTHER', 'an atomic store; result = the value written'),
    EventKind('ATOMIC_RMW', 72, 'ATOMIC', 'OTHER', 'an atomic read-modify-write (exchange, fetch_add, ...); result = the old value'),
    EventKind('ATOMIC_CMPXCHG', 73, 'ATOMIC', 'OTHER', 'an atomic compare-exchange; result = the old value; aux bit 31 = it succeeded'),
    EventKind('ATOMIC_FENCE', 74, 'NONE', 'OTHER', 'an atomic_thread_fence (a full fence between threads)'),
    EventKind('PROC_FORK', 64, 'THREAD', 'CREATE', "fork or vfork; aux = the child's first thread; result = the child's pid, or -errno"),
    EventKind('PROC_SPAWN', 65, 'THREAD', 'CREATE', "posix_spawn or posix_spawnp; aux = the child's first thread; result = the child's pid, or -error"),
    EventKind('PROC_EXEC', 66, 'NONE', 'OTHER', 'an exec call, logged before it runs; the thread goes on in the new image; result = 0, or -errno if it failed; data = path and arguments'),
    EventKind('SIGSUSPEND', 68, 'NONE', 'INPUT', 'sigsuspend or pause returned (-EINTR): a signal came, recorded as the SIGNAL events next; aux = 1 if one was already waiting, so the thread did not sleep'),
    EventKind('SIGWAIT', 69, 'NONE', 'OTHER', 'sigwait, sigwaitinfo or sigtimedwait took a signal (ordered, like the kill that sent it); result = the signal, or -errno; data = its siginfo (code, pid, uid, value) and whether the program sent it'),
    EventKind('PROC_WAIT', 67, 'NONE', 'INPUT', 'wait, waitpid, wait3, wait4 or waitid returned; aux = options; result = the pid, 0 or -errno; data = status and rusage, or the siginfo'),
    EventKind('CLOCK_GETTIME', 100, 'NONE', 'INPUT', 'clock_gettime (or timespec_get); aux = clock id; result = ns, or -errno'),
    EventKind('GETTIMEOFDAY', 101, 'NONE', 'INPUT', 'gettimeofday; result = microseconds since the epoch, or -errno'),
    EventKind('TIME', 102, 'NONE', 'INPUT', 'time; result = seconds since the epoch'),
    EventKind('CLOCK', 103, 'NONE', 'INPUT', 'clock; result = processor time in CLOCKS_PER_SEC units'),
    EventKind('GETRANDOM', 104, 'NONE', 'INPUT', 'getrandom or getentropy; result = bytes, or -errno; data = the bytes'),
    EventKind('READ', 105, 'NONE', 'INPUT', 'read, readv, pread or preadv of a pipe, socket, terminal or device; aux = fd; result = bytes, or -errno; data = the bytes'),
    EventKind('FILE_READ', 106, 'NONE', 'INPUT', 'read of a regular file, re-read in replay; aux = fd; result = bytes, or -errno; data = a 64-bit hash of the bytes'),
    EventKind('FILE_MAPPED', 19, 'NONE', 'INPUT', "mmap of a regular file by the program; aux = fd; result = the bytes of the file the mapping shows that the recording kept (a readable mapping of 1 MiB at most, while the process's budget of kept bytes lasts; else 0), or -errno; data = those bytes, which replay puts in its mapping (the program or the user may have changed the file since)"),
    EventKind('FILE_READ_KEPT', 27, 'NONE', 'INPUT', 'read of a regular file whose bytes the recording kept: a small one (1 MiB at most then), or one the program has open for writing too; by replay they may be gone (the program or the user changed the file), so replay returns them and moves the file offset as the read did; aux = fd; result = bytes, or -errno; data = the bytes'),
    EventKind('PIPE_READ', 107, 'NONE', 'INPUT', 'read of a pipe both ends of which the program made; re-read in replay; aux = fd; data = the bytes'),
    EventKind('RECV', 108, 'NONE', 'INPUT', "recv, recvfrom, recvmsg or recvmmsg (one event a message) of a socket from the outside world; aux = fd; result = bytes (a datagram's full length with MSG_TRUNC), or -errno; data = name length, name bytes kept, control length, msg_flags, bytes copied (5 x 32 bits), the name, the ancillary data, the bytes; descriptors passed in it are stand-ins in replay, read from the recording"),
    EventKind('SOCK_RECV', 93, 'NONE', 'INPUT', 'recv, recvfrom, recvmsg or recvmmsg of a socket pair both ends of which the program made: received again in replay and checked (descriptors passed in it are real, moved to their recorded numbers); aux = fd; result and data as RECV'),
    EventKind('SEND', 109, 'NONE', 'OUTPUT', 'send, sendto, sendmsg or write to a socket, checked and not sent in replay; aux = fd; data = a 64-bit hash'),
    EventKind('MSG_RECV', 16, 'NONE', 'INPUT', "mq_receive, mq_timedreceive or msgrcv: a message queue other processes share, drained by the recording before replay; aux = 0 POSIX, 1 System V; result = the message's length, or -errno; data = the priority (POSIX, 4 bytes) or the type (System V, a long), then the message"),
    EventKind('MSG_SEND', 17, 'NONE', 'OUTPUT', 'mq_send, mq_timedsend or msgsnd, checked and not sent in replay (the queue may be full or gone); a hand-off, placed before it runs (a receive it lets through comes after it); aux = 0 POSIX, 1 System V; result = 0 or -errno; data = a 64-bit hash of the message (System V: with its type)'),
    EventKind('SYSV_GET', 43, 'NONE', 'INPUT', "semget, shmget or msgget: the id the kernel picked (objects other processes share, or made anew each run); the program sees the recorded id in replay, which makes no semaphore set or queue (their calls are inputs: SYSV_OP, SYSV_CTL, MSG_RECV, MSG_SEND) and, for a segment, a private one of the same size, marked removed at once, that shmat attaches instead; aux = 0 semaphores, 1 shared memory, 2 message queue; result = the id, or -errno; data = a segment's size (8 bytes)"),
    EventKind('SYSV_OP', 29, 'NONE', 'INPUT', 'semop or semtimedop, not performed in replay and kept in its recorded order among the hand-offs (one that only adds takes its place before it runs); result = 0 or -errno'),
    EventKind('SYSV_CTL', 28, 'NONE', 'INPUT', "semctl, shmctl or msgctl, not performed in replay; aux = kind (as SYSV_GET) << 16 | cmd; result = what it returned, or -errno; data = what it wrote (a *_ds or *info struct, or GETALL's values)"),
    EventKind('ACCEPT', 110, 'NONE', 'OTHER', 'accept or accept4 (ordered: it takes a file descriptor number); aux = listening fd; result = new fd, or -errno; data = peer address'),
    EventKind('CONNECT', 111, 'NONE', 'INPUT', 'connect; aux = fd; result = 0 or -errno'),
    EventKind('POLL', 112, 'NONE', 'INPUT', 'poll or ppoll; result = ready fds, or -errno; data = the revents'),
    EventKind('SELECT', 113, 'NONE', 'INPUT', 'select or pselect; result = ready fds, or -errno; data = the three fd sets, then for select with a timeout the struct timeval it left (the time not slept, which Linux writes back)'),
    EventKind('EPOLL_WAIT', 114, 'NONE', 'INPUT', 'epoll_wait or epoll_pwait; aux = epoll fd; result = events, or -errno; data = the events'),
    EventKind('GETPID', 115, 'NONE', 'INPUT', 'getpid; result = the recorded pid'),
    EventKind('GETPPID', 116, 'NONE', 'INPUT', 'getppid; result = the recorded parent pid'),
    EventKind('GETTID', 117, 'NONE', 'INPUT', 'gettid; result = the recorded thread id'),
    EventKind('SYSCONF', 118, 'NONE', 'INPUT', 'sysconf, get_nprocs, get_phys_pages, get_avphys_pages: machine facts that vary (processors online, free memory); aux = the name; result'),
    EventKind('SCHED_YIELD', 119, 'NONE', 'INPUT', 'sched_yield'),
    EventKind('SLEEP', 120, 'NONE', 'INPUT', 'nanosleep, clock_nanosleep, usleep or sleep, skipped in replay; result = 0 or -errno'),
    EventKind('SIGNAL_SEND', 89, 'NONE', 'OTHER', "kill, sigqueue or tgkill to the program's own process: ordered, so that the signal's delivery (a SIGNAL event, or a sigwait) comes after it; aux = signal number; result = 0 or -errno"),
    EventKind('PROC_STOP', 135, 'NONE', 'OTHER', 'kill, sigqueue or tgkill of SIGSTOP, SIGTSTP, SIGTTIN or SIGTTOU to another process of the program, or ptrace PTRACE_ATTACH or PTRACE_INTERRUPT of one: ordered, so that what the target did before it in the recording comes before it in replay too (a process stopped while it waits for its turn would hold back every event after that turn); aux = the signal, or PTRACE | the request; result = what the call returned, or -errno'),
    EventKind('SIGNAL_OUT', 44, 'NONE', 'INPUT', 'kill, sigqueue or tgkill to a process outside the program (never one of its processes or threads): not sent again in replay, where it may be gone or another; aux = signal number; result = 0 or -errno'),
    EventKind('SIGNAL', 121, 'NONE', 'INPUT', 'an asynchronous signal, delivered here; aux = signal number; result = si_code; data = sender pid, uid, value'),
    EventKind('SIGNAL_RETURN', 90, 'NONE', 'OTHER', "the program's handler of the SIGNAL event before it returned (not in strict mode, where the handler runs in that event's turn): ordered, so that what the handler wrote without a lock reaches other threads before their next events, as it did; none when the handler did not return (siglongjmp, exit); aux = signal number"),
    EventKind('RDTSC', 122, 'NONE', 'INPUT', 'rdtsc or rdtscp, trapped; result = the counter'),
    EventKind('PREEMPT', 125, 'THREAD', 'OTHER', 'strict mode: the thread running made no event for too long and lost its turn (the watchdog); replay is not exact around here; aux = the thread preempted'),
    EventKind('FD_CLOSE', 76, 'NONE', 'OTHER', "close: ordered, since it frees a number that threads race to take next, and a pipe's read end decides whether writes into it fail; aux = the fd; result = 0 or -errno"),
    EventKind('FD_OPEN', 127, 'NONE', 'OTHER', 'socket, socketpair, pipe, pipe2, dup, open, openat, eventfd, epoll_create, timerfd_create, signalfd, memfd_create or inotify_init: ordered, since threads race for the lowest free number; aux = the first fd argument, if any; result = the new fd, or -errno'),
    EventKind('BLOCK', 126, 'NONE', 'OTHER', 'strict mode: the thread gives up its turn before a call that may block, and takes it back with its next event; aux = the kind of that call'),
    EventKind('SYSINFO', 124, 'NONE', 'INPUT', 'sysinfo; result = 0 or -errno; data = the struct sysinfo'),
    EventKind('GETCPU', 82, 'NONE', 'INPUT', 'sched_getcpu: the CPU the thread ran on (per-CPU shards steer programs); result = it, or -errno'),
    EventKind('RUSAGE', 83, 'NONE', 'INPUT', 'getrusage; aux = who (RUSAGE_SELF 0, RUSAGE_CHILDREN -1, RUSAGE_THREAD 1); result = 0 or -errno; data = the struct rusage'),
    EventKind('TIMES', 84, 'NONE', 'INPUT', "times: the process's CPU times; result = what it returned (clock ticks), or -errno; data = the struct tms"),
    EventKind('SIGPENDING', 95, 'NONE', 'INPUT', 'sigpending: the signals blocked and waiting (replay has none of its own: it delivers the recorded ones itself); result = 0 or -errno; data = the sigset_t'),
    EventKind('SCHED_QUERY', 63, 'NONE', 'INPUT', "sched_getscheduler, sched_getparam, sched_getaffinity or sched_rr_get_interval: what the scheduler says about a process (this machine's CPUs, or a process outside the program, gone by replay); aux = 0 getscheduler, 1 getparam, 2 getaffinity, 3 rr_get_interval; result = the policy, 0, or -errno; data = the struct or CPU mask filled"),
    EventKind('CC_YIELD', 75, 'NONE', 'OTHER', "strict mode: a thread built with det-cc handed its turn on at a logical-clock tick or memory point (no call there), or a PCT run switched threads before a patched atomic; aux = 0 tick, 1 memory point, 2 before a patched atomic; result = that counter's value in the thread (0 for 2), where replay hands over again"),
    EventKind('STAT', 96, 'NONE', 'INPUT', 'stat, lstat, fstat, fstatat, statx (and their 64 and __xstat forms): file metadata steers programs like make; aux = the fd, or a hash of the path; result = 0 or -errno; data = the struct the call filled'),
    EventKind('ACCESS', 97, 'NONE', 'INPUT', 'access, faccessat, eaccess or euidaccess; aux = a hash of the path and mode; result = 0 or -errno'),
    EventKind('TEMP_NAME', 98, 'NONE', 'INPUT', 'mkstemp, mkostemp, mkstemps, mkostemps or mkdtemp: the name libc drew at random; replay makes the same file or directory; result = the fd (0 for mkdtemp), or -errno; data = the name'),
    EventKind('PATH_RESOLVE', 88, 'NONE', 'INPUT', "realpath, canonicalize_file_name, readlink or readlinkat: what the file system says a name is (links read, whether it exists: glibc's realpath reads links inside libc, past det); aux = 0 realpath, 1 readlink; result = the length of the path returned, or -errno; data = that path, then the name asked about"),
    EventKind('DIR_READ', 99, 'NONE', 'INPUT', 'readdir or readdir64: the entry it returned; listings change between runs (a trace being written, files the run itself made) and programs act on them (Python imports list their path); result = 1, 0 at the end, or -errno; data = inode, offset, type and name'),
    EventKind('SOCKOPT', 92, 'NONE', 'INPUT', 'setsockopt, getsockopt, getsockname, getpeername or shutdown of a socket from the outside world (in replay a stand-in, or never connected); setsockopt and shutdown run in replay too but return the recorded result; aux = fd; result = 0 or -errno; data = the length reported, then the bytes written'),
    EventKind('TRANSFER', 94, 'NONE', 'INPUT', "sendfile, splice, tee or copy_file_range: its count steers the program; into a socket from the outside world, replay sends nothing and moves the source on (a file's bytes checked by hash); from a socket or device, det read and wrote the bytes itself and replay writes them; otherwise replay moves the recorded count again; aux = the out fd; result = bytes, or -errno; data = source start, hash, hashed, copied (see preload/transfers.c), then the bytes copied"),
    EventKind('WRITE', 123, 'NONE', 'INPUT', 'write or writev to a pipe, terminal or device, or send, sendto or sendmsg on a socket pair the program made: its result (a short count, EAGAIN) steers the program; replay writes exactly that (a whole message by the same call, its ancillary data with it); aux = fd'),
    EventKind('OMP_LOCK', 77, 'OMP_LOCK', 'ACQUIRE', 'OpenMP: a critical section or the atomic region entered (GOMP_critical_start, GOMP_critical_name_start, GOMP_atomic_start), or omp_set_lock or omp_set_nest_lock returned'),
    EventKind('OMP_TESTLOCK', 78, 'OMP_LOCK', 'ACQUIRE', 'OpenMP: omp_test_lock or omp_test_nest_lock returned; result = 0 if it took the lock, else EBUSY'),
    EventKind('OMP_UNLOCK', 79, 'OMP_LOCK', 'RELEASE', 'OpenMP: a critical section or the atomic region left, or omp_unset_lock or omp_unset_nest_lock'),
    EventKind('OMP_LOCK_DESTROY', 80, 'OMP_LOCK', 'DESTROY', 'OpenMP: omp_destroy_lock or omp_destroy_nest_lock'),
    EventKind('OMP_SHARE', 81, 'NONE', 'INPUT', 'OpenMP: the share of a work-sharing construct libgomp handed this thread (first come, first served), which replay hands it again; aux = 0 a chunk of a loop (dynamic, guided or runtime schedule; result = 1 if there was one; data = its first and end iteration), 1 the same for an unsigned long long loop, 2 a section (result = its number, 0 for none), 3 a single construct (result = 1 in the thread that runs it)'),
    EventKind('SYSCALL', 91, 'NONE', 'OTHER', "a system call a detrec --ptrace recording saw (seccomp) and replay runs again in its recorded turn (a call that may block, or a write whose order shows); aux = its number; result = what it returned (a write's count and a regular file's read are checked in replay)"),
    EventKind('FUTEX_WAIT', 128, 'FUTEX', 'OTHER', 'one thread at a time (strict, PCT, logical): futex FUTEX_WAIT or FUTEX_WAIT_BITSET returned, a wait that handed the turn on while it slept (preload/futex.c); result = 0 woken (or a spurious wake-up), or -errno: EAGAIN the word held another value, ETIMEDOUT'),
    EventKind('FUTEX_WAKE', 129, 'FUTEX', 'SIGNAL', 'one thread at a time (strict, PCT, logical): futex FUTEX_WAKE, FUTEX_WAKE_BITSET, FUTEX_WAKE_OP, FUTEX_REQUEUE or FUTEX_CMP_REQUEUE: wakes waiters of the word; aux = the operation; result = what the call returned (how many it woke, or moved), or -errno'),
    EventKind('IOCTL', 130, 'NONE', 'INPUT', "ioctl whose answer is the world's now: FIONREAD/TIOCINQ and TIOCOUTQ (bytes waiting to be read or sent, which timing decides), TIOCGWINSZ (a terminal's size); aux = the request's low 16 bits; result = 0 or -errno; data = what the call wrote"),
    EventKind('TIMER_QUERY', 131, 'NONE', 'INPUT', "what a timer has left: alarm, getitimer, setitimer, timer_gettime, timer_settime, timer_getoverrun, timerfd_gettime or timerfd_settime (replay skips sleeps and takes signals from the trace, so the kernel's timers there say something else); the call is made in replay too; aux = the call (preload/timer_state.c); result = what it returned, or -errno; data = the old or current value it wrote"),
    EventKind('FLOCK_TAKE', 132, 'FLOCK', 'ACQUIRE', "a file lock taken or tried (preload/file_locks.c): flock LOCK_SH or LOCK_EX, lockf F_LOCK or F_TLOCK, fcntl F_SETLK(W) or F_OFD_SETLK(W) of a read or write lock; who gets a file's lock first is an order between processes; aux = the call; result = 0, or -errno (EWOULDBLOCK, EAGAIN, EACCES: another held it; EINTR, EDEADLK)"),
    EventKind('FLOCK_DROP', 133, 'FLOCK', 'RELEASE', 'a file lock let go: flock LOCK_UN, lockf F_ULOCK, fcntl F_SETLK(W) or F_OFD_SETLK(W) of F_UNLCK; aux = the call; result = 0 or -errno'),
    EventKind('MQ_NOTIFY', 136, 'NONE', 'INPUT', "mq_notify: a queue takes one registration at a time, and a message sent in the recording used it up; replay's stand-in queue gets no message, so the kernel is asked only while recording (SIGEV_THREAD: det's reader thread, preload/timers.c); result = 0 or -errno"),
    EventKind('SHM_ATTACH', 134, 'NONE', 'INPUT', "shmat's outcome: replay attaches its stand-in for the segment (SYSV_GET) only where the recording's attached (a segment removed with nobody attached is gone: EINVAL); result = 0 or -errno"),
)

THREAD_CREATE = 1
THREAD_START = 2
THREAD_EXIT = 3
THREAD_JOIN = 4
THREAD_TRYJOIN = 5
THREAD_TIMEDJOIN = 6
THREAD_DETACH = 7
THREAD_CANCEL = 8
THREAD_CANCELED = 9
MUTEX_LOCK = 10
MUTEX_TRYLOCK = 11
MUTEX_TIMEDLOCK = 12
MUTEX_CLOCKLOCK = 13
MUTEX_UNLOCK = 14
MUTEX_DESTROY = 15
COND_WAIT = 20
COND_TIMEDWAIT = 21
COND_CLOCKWAIT = 22
COND_WAKE = 23
COND_SIGNAL = 24
COND_BROADCAST = 25
COND_DESTROY = 26
RWLOCK_RDLOCK = 30
RWLOCK_TRYRDLOCK = 31
RWLOCK_TIMEDRDLOCK = 32
RWLOCK_CLOCKRDLOCK = 33
RWLOCK_WRLOCK = 34
RWLOCK_TRYWRLOCK = 35
RWLOCK_TIMEDWRLOCK = 36
RWLOCK_CLOCKWRLOCK = 37
RWLOCK_UNLOCK = 38
RWLOCK_DESTROY = 39
BARRIER_ARRIVE = 40
BARRIER_DEPART = 41
BARRIER_DESTROY = 42
SEM_WAIT = 45
SEM_TRYWAIT = 46
SEM_TIMEDWAIT = 47
SEM_CLOCKWAIT = 48
SEM_POST = 49
SEM_DESTROY = 50
SEM_OPEN = 59
SEM_VALUE = 51
NAME_UNLINK = 56
SPIN_LOCK = 52
SPIN_TRYLOCK = 53
SPIN_UNLOCK = 54
SPIN_DESTROY = 55
ONCE = 57
ONCE_INIT = 58
GUARD_ACQUIRE = 85
GUARD_RELEASE = 86
GUARD_ABORT = 87
STDIO_WRITE = 60
STDIO_READ = 18
FILE_LOCK = 61
FILE_UNLOCK = 62
ATOMIC_LOAD = 70
ATOMIC_STORE = 71
ATOMIC_RMW = 72
ATOMIC_CMPXCHG = 73
ATOMIC_FENCE = 74
PROC_FORK = 64
PROC_SPAWN = 65
PROC_EXEC = 66
SIGSUSPEND = 68
SIGWAIT = 69
PROC_WAIT = 67
CLOCK_GETTIME = 100
GETTIMEOFDAY = 101
TIME = 102
CLOCK = 103
GETRANDOM = 104
READ = 105
FILE_READ = 106
FILE_MAPPED = 19
FILE_READ_KEPT = 27
PIPE_READ = 107
RECV = 108
SOCK_RECV = 93
SEND = 109
MSG_RECV = 16
MSG_SEND = 17
SYSV_GET = 43
SYSV_OP = 29
SYSV_CTL = 28
ACCEPT = 110
CONNECT = 111
POLL = 112
SELECT = 113
EPOLL_WAIT = 114
GETPID = 115
GETPPID = 116
GETTID = 117
SYSCONF = 118
SCHED_YIELD = 119
SLEEP = 120
SIGNAL_SEND = 89
PROC_STOP = 135
SIGNAL_OUT = 44
SIGNAL = 121
SIGNAL_RETURN = 90
RDTSC = 122
PREEMPT = 125
FD_CLOSE = 76
FD_OPEN = 127
BLOCK = 126
SYSINFO = 124
GETCPU = 82
RUSAGE = 83
TIMES = 84
SIGPENDING = 95
SCHED_QUERY = 63
CC_YIELD = 75
STAT = 96
ACCESS = 97
TEMP_NAME = 98
PATH_RESOLVE = 88
DIR_READ = 99
SOCKOPT = 92
TRANSFER = 94
WRITE = 123
OMP_LOCK = 77
OMP_TESTLOCK = 78
OMP_UNLOCK = 79
OMP_LOCK_DESTROY = 80
OMP_SHARE = 81
SYSCALL = 91
FUTEX_WAIT = 128
FUTEX_WAKE = 129
IOCTL = 130
TIMER_QUERY = 131
FLOCK_TAKE = 132
FLOCK_DROP = 133
MQ_NOTIFY = 136
SHM_ATTACH = 134

# Named values of an event's aux field (DET_AUX).
AUX_THREAD_CANCELED_IN_CALL = 0
AUX_THREAD_CANCELED_TESTCANCEL = 1
AUX_THREAD_CANCELED_ELSEWHERE = 2
AUX_STDIO_WRITE_SHARED = 1
AUX_PROC_WAIT_WAITID = 2147483648
AUX_GETRANDOM_CALL = 0
AUX_GETRANDOM_RANDOM_DEVICE = 2
AUX_GETRANDOM_DEVICE_ENTROPY = 3
AUX_GETRANDOM_ARC4RANDOM = 4
AUX_GETRANDOM_TEMP_NAME = 5
AUX_GETRANDOM_AT_RANDOM = 1
AUX_PROC_STOP_PTRACE = 65536

BY_NUMBER: dict[int, EventKind] = {e.number: e for e in EVENTS}
OBJ_BY_NUMBER: dict[int, ObjKind] = {o.number: o for o in OBJKINDS}
