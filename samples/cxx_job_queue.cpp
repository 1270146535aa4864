/*
 * cxx_job_queue - C++: std::thread workers, a std::mutex-protected job
 * queue and a std::condition_variable.
 *
 * The bug: a worker treats "the queue is empty" as "there is no more
 * work" and retires. The producer may simply not have pushed the next job
 * yet; jobs pushed after the last worker retired are never run.
 *
 * The interleaving that triggers it:
 *     producer: push(job k); notify_one
 *     W1: pop(job k) ... W2: queue empty -> retire
 *     W1: queue empty -> retire             producer: push(job k+1)  -> lost
 *
 * Output: "ok: all N jobs ran" in most runs, "BUG: K of N jobs never ran"
 * in some. A trace of a failing run replays with the same count every time.
 *
 * Usage: cxx_job_queue [JOBS]
 */
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

static std::mutex mu;
static std::condition_variable ready;
static std::deque<long> jobs;
static bool started = false;
static long ran = 0;

static void busy(unsigned n)
{
	for (volatile unsigned i = 0; i < n; i++)
		;
}

static void worker()
{
	for (;;) {
		std::unique_lock<std::mutex> lk(mu);
		ready.wait(lk, [] { return started; });
		if (jobs.empty())
			return; /* BUG: empty now does not mean no more work */
		jobs.pop_front();
		lk.unlock();
		busy(2000); /* run the job */
		lk.lock();
		ran++;
	}
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 200;
	if (n <= 0) {
		std::fprintf(stderr, "cxx_job_queue: JOBS must be positive\n");
		return 2;
	}
	std::vector<std::thread> workers;
	for (int i = 0; i < 2; i++)
		workers.emplace_back(worker);
	for (long i = 0; i < n; i++) {
		{
			std::lock_guard<std::mutex> lk(mu);
			jobs.push_back(i);
			started = true;
		}
		ready.notify_one();
		busy(700); /* prepare the next job */
	}
	for (auto &w : workers)
		w.join();
	std::lock_guard<std::mutex> lk(mu);
	long lost = n - ran;
	if (lost) {
		std::printf("BUG: %ld of %ld jobs never ran\n", lost, n);
		return 1;
	}
	std::printf("ok: all %ld jobs ran\n", n);
	return 0;
}
