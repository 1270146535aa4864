/*
 * tests/programs/cxx20_latch.cpp - C++20's std::latch, std::barrier and
 * std::atomic::wait: libstdc++ spins on the atomic with sched_yield a
 * number of times that depends on timing, then waits in a futex. Four
 * threads meet at a latch, then take a mutex in turns between barrier
 * phases; the order they took it in is printed.
 */
#include <atomic>
#include <barrier>
#include <cstdio>
#include <latch>
#include <mutex>
#include <thread>
#include <vector>

int main()
{
	std::mutex m;
	std::vector<int> order;
	std::latch start(4);
	std::barrier phase(4);
	std::atomic<int> flag{0};
	std::vector<std::thread> ts;
	for (int i = 0; i < 4; i++)
		ts.emplace_back([&, i] {
			start.arrive_and_wait();
			for (int k = 0; k < 5; k++) {
				{
					std::lock_guard g(m);
					order.push_back(i);
				}
				phase.arrive_and_wait();
			}
			if (i == 0) {
				flag.store(1);
				flag.notify_all();
			} else {
				flag.wait(0);
			}
		});
	for (auto &t : ts)
		t.join();
	for (int x : order)
		std::printf("%d", x);
	std::printf("\n");
	return 0;
}
