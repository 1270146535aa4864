// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/detsched: det's replay schedules enforced in the kernel. The ABI,
 * and the model it implements, are described in include/det/detsched.h.
 *
 * Rules of this file:
 *  - Every ioctl argument is copied in once, checked whole (reserved
 *    fields zero, numbers in range, sizes within the limits below) and
 *    only then acted on. A thread acts only under the number it
 *    registered, checked against current on every call.
 *  - Locks: ds_lock (mutex) guards the table of schedules; a schedule's
 *    mutex guards registrations; a thread's progress mutex serializes the
 *    advance of its done counter. Waiting happens with none of them held,
 *    and no spinlock is ever held across anything that sleeps or copies
 *    user memory.
 *  - Done counters only grow (RESET needs every thread idle) and are
 *    published with release stores, read with acquire loads. A waiter
 *    sets its waiting flag, then checks its condition; a waker publishes
 *    the counter, then checks the flag (full barriers between, as for a
 *    futex): one of them sees the other. A finished event wakes only the
 *    threads its wake[] list names, only those whose awaited event is now
 *    due, with wake_up_process() and no lock held (a wait queue's lock,
 *    held across the wake-up, cost milliseconds per hand-off in a TCG
 *    guest whose vCPUs the host preempts).
 *  - Wakers find the task through the registered struct pid under RCU; a
 *    pid that is replaced or dropped is put only after synchronize_rcu().
 *  - Lifetime: a schedule is referenced by every file attached to it and
 *    by every mapping of its counters (through the mapping's file). The
 *    owner's release kills it (waiters wake with EOWNERDEAD); the last
 *    reference frees it.
 */
#include <linux/fs.h>
#include <linux/kref.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/random.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include <det/detsched.h>

static unsigned int max_threads = 4096;
module_param(max_threads, uint, 0444);
MODULE_PARM_DESC(max_threads, "threads per schedule (at most 65535)");

static unsigned int max_events = 1u << 22;
module_param(max_events, uint, 0444);
MODULE_PARM_DESC(max_events, "events per schedule (16 bytes of kernel memory each)");

static unsigned int max_schedules = 64;
module_param(max_schedules, uint, 0444);
MODULE_PARM_DESC(max_schedules, "schedules alive at once");

#define DS_NONE U64_MAX

/* The kernel's copy of one event: prerequisites and who waits for it. */
struct ds_event {
	u32 dep_idx[2];
	u16 dep_thread[2];	/* number + 1; 0: none */
	u16 wake[DETSCHED_MAX_WAKE];	/* number + 1; 0: none */
};

struct ds_thread {
	struct ds_event *ev;	/* its events, in the schedule's array */
	u32 count;
	bool waiting;		/* asleep in WAIT (or about to be) */
	u64 want;		/* the event it waits for while waiting */
	struct mutex progress;	/* serializes advances of its done counter */
	struct pid *pid;	/* the registered thread; changed under the schedule's lock */
	struct pid *stale;	/* a replaced pid, put once no waker can see it */
	struct file *file;	/* the file it registered through (identity only) */
};

struct ds_sched {
	struct kref ref;
	u32 id;
	u64 key;
	u32 nthreads;
	u64 total;
	bool dead;
	atomic_t attached;
	struct mutex lock;	/* registrations, RESET, STATE */
	u64 *done;		/* per thread; vmalloc_user, mapped read-only */
	size_t done_size;
	struct ds_event *events;
	struct ds_thread *threads;
};

/* What a file refers to; set once, by LOAD or ATTACH. */
struct ds_file {
	struct ds_sched *s;
	bool owner;
};

static DEFINE_MUTEX(ds_lock);
static DEFINE_XARRAY_ALLOC(ds_scheds);
static unsigned int ds_count;	/* schedules alive; under ds_lock */
module_param_named(schedules_alive, ds_count, uint, 0444);
MODULE_PARM_DESC(schedules_alive, "schedules not freed yet (read only: for tests)");

static void ds_free(struct ds_sched *s)
{
	u32 i;

	if (s->threads) {
		for (i = 0; i < s->nthreads; i++)
			put_pid(s->threads[i].pid);
		kvfree(s->threads);
	}
	kvfree(s->events);
	vfree(s->done);
	kfree(s);
}

static void ds_release_sched(struct kref *ref)
{
	struct ds_sched *s = container_of(ref, struct ds_sched, ref);

	mutex_lock(&ds_lock);
	ds_count--;
	mutex_unlock(&ds_lock);
	ds_free(s);
}

static struct ds_sched *ds_of(struct file *file)
{
	struct ds_file *df = file->private_data;

	/* pairs with the cmpxchg that set it */
	return smp_load_acquire(&df->s);
}

static u64 ds_done(struct ds_sched *s, u32 num)
{
	/* pairs with the release in ds_advance: its thread's events are done */
	return smp_load_acquire(&s->done[num]);
}

static bool ds_due(struct ds_sched *s, const struct ds_event *e)
{
	int i;

	for (i = 0; i < 2; i++)
		if (e->dep_thread[i] && ds_done(s, e->dep_thread[i] - 1) <= e->dep_idx[i])
			return false;
	return true;
}

static void ds_wake_task(struct ds_thread *t)
{
	struct pid *pid;
	struct task_struct *task;

	rcu_read_lock();
	pid = READ_ONCE(t->pid);
	task = pid ? pid_task(pid, PIDTYPE_PID) : NULL;
	if (task)
		wake_up_process(task);
	rcu_read_unlock();
}

/* Wake thread num if it waits for an event that is now due. */
static void ds_wake(struct ds_sched *s, u32 num)
{
	struct ds_thread *t = &s->threads[num];
	u64 want;

	/* the caller's counter store comes first: see smp_mb() in ds_advance */
	if (!READ_ONCE(t->waiting))
		return;
	smp_rmb();	/* want was written before waiting */
	want = READ_ONCE(t->want);
	if (want < t->count && ds_due(s, &t->ev[want]))
		ds_wake_task(t);
}

static void ds_kill(struct ds_sched *s)
{
	u32 i;

	WRITE_ONCE(s->dead, true);
	smp_mb();	/* dead is seen by every waiter that sets waiting later */
	for (i = 0; i < s->nthreads; i++)
		if (READ_ONCE(s->threads[i].waiting))
			ds_wake_task(&s->threads[i]);
}

/*
 * Drop thread t's registration; the caller holds the schedule's lock and
 * calls ds_put_stale() afterwards.
 */
static void ds_unregister(struct ds_thread *t)
{
	t->stale = t->pid;
	WRITE_ONCE(t->pid, NULL);
	t->file = NULL;
}

static void ds_put_stale(struct ds_sched *s)
{
	bool any = false;
	u32 i;

	for (i = 0; i < s->nthreads && !any; i++)
		any = s->threads[i].stale;
	if (!any)
		return;
	synchronize_rcu();	/* no waker still looks at a stale pid */
	for (i = 0; i < s->nthreads; i++) {
		put_pid(s->threads[i].stale);
		s->threads[i].stale = NULL;
	}
}

/*
 * Thread num has done every event before end. Checks that each of them
 * was due (an event done out of turn is refused, and nothing changes),
 * publishes the counter, then wakes whom the events name.
 */
static int ds_advance(struct ds_sched *s, u32 num, u64 end)
{
	struct ds_thread *t = &s->threads[num];
	u64 old, j;
	int i, ret = 0;

	if (end > t->count)
		return -EINVAL;
	mutex_lock(&t->progress);
	old = ds_done(s, num);
	if (end < old) {
		ret = -EINVAL;
		goto out;
	}
	for (j = old; j < end; j++) {
		if (!ds_due(s, &t->ev[j])) {
			ret = -EPERM;
			goto out;
		}
		if ((j & 4095) == 4095)
			cond_resched();
	}
	/* pairs with the acquire in ds_done */
	smp_store_release(&s->done[num], end);
	/* the counter is visible before we look for sleepers */
	smp_mb();
	for (j = old; j < end; j++) {
		for (i = 0; i < DETSCHED_MAX_WAKE; i++)
			if (t->ev[j].wake[i])
				ds_wake(s, t->ev[j].wake[i] - 1);
		if ((j & 4095) == 4095)
			cond_resched();
	}
out:
	mutex_unlock(&t->progress);
	return ret;
}

/* The thread the caller registered as num, or an error. */
static int ds_caller(struct ds_sched *s, u32 num)
{
	if (num >= s->nthreads)
		return -EINVAL;
	if (READ_ONCE(s->threads[num].pid) != task_pid(current))
		return -EACCES;
	if (READ_ONCE(s->dead))
		return -EOWNERDEAD;
	return 0;
}

static bool ds_pid_alive(struct pid *pid)
{
	bool alive;

	rcu_read_lock();
	alive = pid_task(pid, PIDTYPE_PID);
	rcu_read_unlock();
	return alive;
}

/* ---- LOAD ---- */

static int ds_add_wake(struct ds_event *e, u16 who)
{
	int i;

	for (i = 0; i < DETSCHED_MAX_WAKE; i++) {
		if (e->wake[i] == who)
			return 0;
		if (!e->wake[i]) {
			e->wake[i] = who;
			return 0;
		}
	}
	return -E2BIG;	/* more waiters on one event than det ever makes */
}

/* Copy and check the events; fill in who waits for whom. */
static int ds_load_events(struct ds_sched *s, const u32 *counts, const u64 *first,
			  const struct detsched_event __user *uev)
{
	struct detsched_event buf[64];
	u64 at = 0;
	u32 num = 0, left = counts[0];
	int i, ret;

	while (at < s->total) {
		u64 n = min_t(u64, ARRAY_SIZE(buf), s->total - at);
		u64 k;

		if (copy_from_user(buf, uev + at, n * sizeof(buf[0])))
			return -EFAULT;
		for (k = 0; k < n; k++, at++) {
			const struct detsched_event *in = &buf[k];
			struct ds_event *e = &s->events[at];

			while (!left)
				left = counts[++num];
			left--;
			if (in->reserved)
				return -EINVAL;
			for (i = 0; i < 2; i++) {
				u32 d = in->dep_thread[i];

				if (!d) {
					if (in->dep_idx[i])
						return -EINVAL;
					continue;
				}
				if (d > s->nthreads || d == num + 1 ||
				    in->dep_idx[i] >= counts[d - 1])
					return -EINVAL;
				e->dep_thread[i] = d;
				e->dep_idx[i] = in->dep_idx[i];
				ret = ds_add_wake(&s->events[first[d - 1] + e->dep_idx[i]],
						  num + 1);
				if (ret)
					return ret;
			}
		}
		cond_resched();
	}
	return 0;
}

static struct ds_sched *ds_new(const struct detsched_load *l, const u32 *counts)
{
	struct ds_sched *s;
	u64 *first;
	u64 at = 0;
	u32 i;
	int ret = -ENOMEM;

	s = kzalloc(sizeof(*s), GFP_KERNEL_ACCOUNT);
	if (!s)
		return ERR_PTR(-ENOMEM);
	kref_init(&s->ref);
	mutex_init(&s->lock);
	atomic_set(&s->attached, 1);
	s->nthreads = l->nthreads;
	s->total = l->total;
	s->threads = kvcalloc(s->nthreads, sizeof(*s->threads), GFP_KERNEL_ACCOUNT);
	s->events = kvcalloc(max_t(u64, s->total, 1), sizeof(*s->events), GFP_KERNEL_ACCOUNT);
	s->done_size = PAGE_ALIGN(s->nthreads * sizeof(u64));
	s->done = vmalloc_user(s->done_size);
	first = kvcalloc(s->nthreads, sizeof(*first), GFP_KERNEL);
	if (!s->threads || !s->events || !s->done || !first)
		goto fail;
	for (i = 0; i < s->nthreads; i++) {
		struct ds_thread *t = &s->threads[i];

		first[i] = at;
		t->ev = s->events + at;
		t->count = counts[i];
		t->want = DS_NONE;
		mutex_init(&t->progress);
		at += counts[i];
	}
	ret = ds_load_events(s, counts, first, u64_to_user_ptr(l->events));
	if (ret)
		goto fail;
	kvfree(first);
	get_random_bytes(&s->key, sizeof(s->key));
	return s;
fail:
	kvfree(first);
	ds_free(s);
	return ERR_PTR(ret);
}

static long ds_load(struct file *file, void __user *arg)
{
	struct ds_file *df = file->private_data;
	struct detsched_load l;
	struct ds_sched *s;
	u32 *counts;
	u64 sum = 0;
	u32 i, id;
	long ret;

	if (copy_from_user(&l, arg, sizeof(l)))
		return -EFAULT;
	if (l.flags || l.id || l.key || !l.nthreads || l.nthreads > max_threads ||
	    l.nthreads > DETSCHED_MAX_THREADS || l.total > max_events ||
	    l.total > DETSCHED_MAX_EVENTS)
		return -EINVAL;
	if (ds_of(file))
		return -EBUSY;
	counts = kvmalloc_array(l.nthreads, sizeof(*counts), GFP_KERNEL);
	if (!counts)
		return -ENOMEM;
	ret = -EFAULT;
	if (copy_from_user(counts, u64_to_user_ptr(l.counts), l.nthreads * sizeof(*counts)))
		goto out;
	for (i = 0; i < l.nthreads; i++)
		sum += counts[i];
	ret = -EINVAL;
	if (sum != l.total)
		goto out;
	s = ds_new(&l, counts);
	if (IS_ERR(s)) {
		ret = PTR_ERR(s);
		goto out;
	}
	mutex_lock(&ds_lock);
	ret = -ENOSPC;
	if (ds_count < max_schedules)
		ret = xa_alloc(&ds_scheds, &id, s, xa_limit_31b, GFP_KERNEL);
	if (!ret)
		ds_count++;
	mutex_unlock(&ds_lock);
	if (ret) {
		ds_free(s);
		goto out;
	}
	s->id = id;
	l.id = id;
	l.key = s->key;
	if (cmpxchg_release(&df->s, NULL, s)) {
		/* another thread loaded or attached this file meanwhile */
		xa_erase(&ds_scheds, id);
		kref_put(&s->ref, ds_release_sched);
		ret = -EBUSY;
		goto out;
	}
	df->owner = true;
	ret = copy_to_user(arg, &l, sizeof(l)) ? -EFAULT : 0;
out:
	kvfree(counts);
	return ret;
}

/* ---- ATTACH, REGISTER ---- */

static long ds_attach(struct file *file, void __user *arg)
{
	struct ds_file *df = file->private_data;
	struct detsched_attach a;
	struct ds_sched *s;

	if (copy_from_user(&a, arg, sizeof(a)))
		return -EFAULT;
	if (a.reserved || a.nthreads || a.id > U32_MAX)
		return -EINVAL;
	if (ds_of(file))
		return -EBUSY;
	xa_lock(&ds_scheds);
	s = xa_load(&ds_scheds, a.id);
	if (s && (s->key != a.key || READ_ONCE(s->dead) || !kref_get_unless_zero(&s->ref)))
		s = NULL;
	xa_unlock(&ds_scheds);
	if (!s)
		return -ENOENT;
	if (cmpxchg_release(&df->s, NULL, s)) {
		kref_put(&s->ref, ds_release_sched);
		return -EBUSY;
	}
	atomic_inc(&s->attached);
	a.nthreads = s->nthreads;
	return copy_to_user(arg, &a, sizeof(a)) ? -EFAULT : 0;
}

static long ds_register(struct file *file, struct ds_sched *s, void __user *arg)
{
	struct detsched_register r;
	struct ds_thread *t;
	struct pid *me = task_pid(current);
	long ret = 0;

	if (copy_from_user(&r, arg, sizeof(r)))
		return -EFAULT;
	if (r.reserved || r.thread >= s->nthreads)
		return -EINVAL;
	t = &s->threads[r.thread];
	mutex_lock(&s->lock);
	if (READ_ONCE(s->dead)) {
		ret = -EOWNERDEAD;
	} else if (t->pid && t->pid != me && ds_pid_alive(t->pid)) {
		/*
		 * another live thread has this number (an exec'd image's
		 * thread is the same task, or its old id is gone)
		 */
		ret = -EBUSY;
	} else if (t->pid != me) {
		ds_unregister(t);
		WRITE_ONCE(t->pid, get_pid(me));
		ds_put_stale(s);
	}
	if (!ret)
		t->file = file;
	mutex_unlock(&s->lock);
	return ret;
}

/* ---- WAIT, DONE ---- */

static long ds_wait(struct ds_sched *s, void __user *arg)
{
	struct detsched_wait w;
	struct ds_thread *t;
	struct ds_event *e;
	ktime_t expires;
	long ret;

	if (copy_from_user(&w, arg, sizeof(w)))
		return -EFAULT;
	if (w.reserved || w.timeout_ns > DETSCHED_MAX_TIMEOUT_NS)
		return -EINVAL;
	ret = ds_caller(s, w.thread);
	if (ret)
		return ret;
	t = &s->threads[w.thread];
	if (w.idx >= t->count)
		return -EINVAL;
	ret = ds_advance(s, w.thread, w.idx);
	if (ret)
		return ret;
	e = &t->ev[w.idx];
	if (ds_due(s, e))
		return 0;
	if (!w.timeout_ns)
		return -EAGAIN;
	expires = ktime_add_ns(ktime_get(), w.timeout_ns);
	WRITE_ONCE(t->want, w.idx);
	for (;;) {
		set_current_state(TASK_INTERRUPTIBLE);
		smp_wmb();	/* want before waiting: see ds_wake */
		WRITE_ONCE(t->waiting, true);
		smp_mb();	/* waiting before the condition: see ds_advance */
		if (READ_ONCE(s->dead) || ds_due(s, e)) {
			ret = 0;
			break;
		}
		if (signal_pending(current)) {
			ret = -EINTR;
			break;
		}
		if (!schedule_hrtimeout(&expires, HRTIMER_MODE_ABS)) {
			ret = ds_due(s, e) ? 0 : -ETIMEDOUT;
			break;
		}
	}
	__set_current_state(TASK_RUNNING);
	WRITE_ONCE(t->waiting, false);
	if (ret)
		return ret;
	return READ_ONCE(s->dead) ? -EOWNERDEAD : 0;
}

static long ds_done_ioctl(struct ds_sched *s, void __user *arg)
{
	struct detsched_done d;
	long ret;

	if (copy_from_user(&d, arg, sizeof(d)))
		return -EFAULT;
	if (d.reserved)
		return -EINVAL;
	ret = ds_caller(s, d.thread);
	if (ret)
		return ret;
	if (d.idx >= s->threads[d.thread].count)
		return -EINVAL;
	return ds_advance(s, d.thread, d.idx + 1);
}

/* ---- STATE, RESET ---- */

static long ds_state(struct ds_sched *s, void __user *arg)
{
	struct detsched_thread_state *ts = NULL;
	struct detsched_state st;
	u32 i, n;
	long ret = 0;

	if (copy_from_user(&st, arg, sizeof(st)))
		return -EFAULT;
	if (st.id || st.total || st.nthreads || st.flags || st.attached ||
	    (st.cap && !st.threads))
		return -EINVAL;
	n = min(st.cap, s->nthreads);
	if (n && st.threads) {
		ts = kvcalloc(n, sizeof(*ts), GFP_KERNEL);
		if (!ts)
			return -ENOMEM;
	}
	mutex_lock(&s->lock);
	for (i = 0; ts && i < n; i++) {
		struct ds_thread *t = &s->threads[i];

		ts[i].done = ds_done(s, i);
		ts[i].count = t->count;
		ts[i].waiting = READ_ONCE(t->waiting);
		ts[i].waiting_for = ts[i].waiting ? READ_ONCE(t->want) : 0;
		ts[i].pid = t->pid ? pid_vnr(t->pid) : 0;
	}
	mutex_unlock(&s->lock);
	st.id = s->id;
	st.total = s->total;
	st.nthreads = s->nthreads;
	st.flags = READ_ONCE(s->dead) ? DETSCHED_STATE_DEAD : 0;
	st.attached = atomic_read(&s->attached);
	if (ts && copy_to_user(u64_to_user_ptr(st.threads), ts, n * sizeof(*ts)))
		ret = -EFAULT;
	else if (copy_to_user(arg, &st, sizeof(st)))
		ret = -EFAULT;
	kvfree(ts);
	return ret;
}

/* The program starts again (gdb): every counter back to zero. */
static long ds_reset(struct ds_sched *s)
{
	long ret = 0;
	u32 i;

	mutex_lock(&s->lock);
	for (i = 0; i < s->nthreads; i++) {
		struct ds_thread *t = &s->threads[i];

		if (READ_ONCE(t->waiting) || (t->pid && t->pid != task_pid(current) &&
					      ds_pid_alive(t->pid))) {
			ret = -EBUSY;	/* a thread of the previous run is still there */
			goto out;
		}
	}
	for (i = 0; i < s->nthreads; i++) {
		struct ds_thread *t = &s->threads[i];

		mutex_lock(&t->progress);
		/* pairs with the acquire in ds_done */
		smp_store_release(&s->done[i], 0);
		mutex_unlock(&t->progress);
		if (t->pid != task_pid(current))
			ds_unregister(t);
	}
	ds_put_stale(s);
out:
	mutex_unlock(&s->lock);
	return ret;
}

static long ds_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	void __user *uarg = (void __user *)arg;
	struct ds_sched *s;

	switch (cmd) {
	case DETSCHED_IOC_LOAD:
		return ds_load(file, uarg);
	case DETSCHED_IOC_ATTACH:
		return ds_attach(file, uarg);
	case DETSCHED_IOC_REGISTER:
	case DETSCHED_IOC_WAIT:
	case DETSCHED_IOC_DONE:
	case DETSCHED_IOC_STATE:
	case DETSCHED_IOC_RESET:
		break;
	default:
		return -ENOTTY;
	}
	s = ds_of(file);
	if (!s)
		return -ENXIO;	/* neither loaded nor attached */
	switch (cmd) {
	case DETSCHED_IOC_REGISTER:
		return ds_register(file, s, uarg);
	case DETSCHED_IOC_WAIT:
		return ds_wait(s, uarg);
	case DETSCHED_IOC_DONE:
		return ds_done_ioctl(s, uarg);
	case DETSCHED_IOC_STATE:
		return ds_state(s, uarg);
	default:
		return ds_reset(s);
	}
}

/* Only the module writes the counters: no mapping of them ever may. */
static int ds_vm_mprotect(struct vm_area_struct *vma, unsigned long start,
			  unsigned long end, unsigned long newflags)
{
	return (newflags & VM_WRITE) ? -EACCES : 0;
}

static const struct vm_operations_struct ds_vm_ops = {
	.mprotect = ds_vm_mprotect,
};

static int ds_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct ds_sched *s = ds_of(file);
	int ret;

	if (!s)
		return -ENXIO;
	if (vma->vm_flags & VM_WRITE)
		return -EPERM;
	if (vma->vm_pgoff || vma->vm_end - vma->vm_start > s->done_size)
		return -EINVAL;
	ret = remap_vmalloc_range(vma, s->done, 0);
	if (!ret)
		vma->vm_ops = &ds_vm_ops;
	return ret;
}

static int ds_open(struct inode *inode, struct file *file)
{
	struct ds_file *df = kzalloc(sizeof(*df), GFP_KERNEL);

	if (!df)
		return -ENOMEM;
	file->private_data = df;
	return nonseekable_open(inode, file);
}

static int ds_release(struct inode *inode, struct file *file)
{
	struct ds_file *df = file->private_data;
	struct ds_sched *s = df->s;
	u32 i;

	if (s) {
		if (df->owner) {
			mutex_lock(&ds_lock);
			xa_erase(&ds_scheds, s->id);
			mutex_unlock(&ds_lock);
			ds_kill(s);
		}
		/* the threads that registered through this file are gone */
		mutex_lock(&s->lock);
		for (i = 0; i < s->nthreads; i++) {
			struct ds_thread *t = &s->threads[i];

			if (t->file == file)
				ds_unregister(t);
		}
		ds_put_stale(s);
		mutex_unlock(&s->lock);
		atomic_dec(&s->attached);
		kref_put(&s->ref, ds_release_sched);
	}
	kfree(df);
	return 0;
}

static const struct file_operations ds_fops = {
	.owner = THIS_MODULE,
	.open = ds_open,
	.release = ds_release,
	.unlocked_ioctl = ds_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = ds_mmap,
};

static struct miscdevice ds_dev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "detsched",
	.fops = &ds_fops,
	.mode = 0666,
};

static int __init ds_init(void)
{
	if (!max_threads || max_threads > DETSCHED_MAX_THREADS || !max_events ||
	    max_events > DETSCHED_MAX_EVENTS || !max_schedules)
		return -EINVAL;
	return misc_register(&ds_dev);
}

static void __exit ds_exit(void)
{
	misc_deregister(&ds_dev);
	WARN_ON(!xa_empty(&ds_scheds));
}

module_init(ds_init);
module_exit(ds_exit);
MODULE_DESCRIPTION("det: replay schedules enforced in the kernel");
MODULE_LICENSE("GPL");
