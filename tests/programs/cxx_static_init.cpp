/*
 * tests/programs/cxx_static_init.cpp - four threads meet at a barrier and
 * call a function whose local static takes a while to construct: whichever
 * thread gets there first constructs it (libstdc++'s __cxa_guard_acquire)
 * and logs itself under a mutex; the others wait for it. Prints the log and
 * what each thread got: which thread won depends on timing.
 */
#include <barrier>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

static std::mutex m;
static std::vector<int> trail;

struct Slow {
	int who;
	explicit Slow(int i) : who(i)
	{
		volatile long x = 0;
		for (long k = 0; k < 300000; k++)
			x = x + k;
		std::lock_guard g(m);
		trail.push_back(100 + i);
	}
};

static int first_caller(int i)
{
	static Slow s(i);
	return s.who;
}

int main()
{
	std::vector<std::thread> ts;
	int got[4];
	std::barrier meet(4);
	for (int i = 0; i < 4; i++)
		ts.emplace_back([&, i] {
			{
				std::lock_guard g(m);
				trail.push_back(i);
			}
			meet.arrive_and_wait();
			got[i] = first_caller(i);
		});
	for (auto &t : ts)
		t.join();
	for (int x : trail)
		std::printf("%d ", x);
	std::printf("| %d %d %d %d\n", got[0], got[1], got[2], got[3]);
	return 0;
}
