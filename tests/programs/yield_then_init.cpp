/*
 * tests/programs/yield_then_init.cpp - before each first use of a
 * function-local static and each pthread_once, main yields or not by a bit
 * of a counter that another thread bumps without synchronization (which det
 * does not record: a spin loop yields by its timing so). Replay must still
 * see that main initializes each one when a recorded yield is not made
 * again.
 */
#include <atomic>
#include <cstdio>
#include <pthread.h>
#include <sched.h>
#include <thread>

static std::atomic<unsigned long> ticks;
static std::atomic<bool> stop;

static void maybe_yield()
{
	volatile long x = 0;
	for (long k = 0; k < 2000; k++)
		x = x + k;
	if ((ticks.load(std::memory_order_relaxed) >> 2) & 1)
		sched_yield();
}

struct Slow {
	int v;
	explicit Slow(int n) : v(n)
	{
		volatile long x = 0;
		for (long k = 0; k < 1000; k++)
			x = x + k;
	}
};

template <int N> static int constructed()
{
	static Slow s(N);
	return s.v;
}

static pthread_once_t once[4] = {PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT};
static int ran;

static void init_once()
{
	ran++;
}

int main()
{
	std::thread bumper([] {
		while (!stop.load(std::memory_order_relaxed))
			ticks.fetch_add(1, std::memory_order_relaxed);
	});
	while (ticks.load(std::memory_order_relaxed) < 1000)
		;
	int sum = 0;
	maybe_yield();
	sum += constructed<1>();
	maybe_yield();
	sum += constructed<2>();
	maybe_yield();
	sum += constructed<3>();
	maybe_yield();
	sum += constructed<4>();
	for (auto &o : once) {
		maybe_yield();
		pthread_once(&o, init_once);
	}
	stop = true;
	bumper.join();
	std::printf("%d %d\n", sum, ran);
	return 0;
}
