/*
 * tests/programs/once_throw.cpp - std::call_once whose callable throws
 * twice before it succeeds: each throw unwinds through pthread_once (and
 * det's wrapper of it), and the unwinder makes calls of its own as it goes.
 */
#include <cstdio>
#include <mutex>
#include <thread>

static std::once_flag flag;
static std::mutex m;
static int tries;

int main()
{
	for (int i = 0; i < 3; i++) {
		try {
			std::call_once(flag, [] {
				if (++tries < 3)
					throw tries;
			});
		} catch (int n) {
			std::lock_guard<std::mutex> g(m);
			std::printf("attempt %d threw\n", n);
		}
	}
	std::thread t([] {
		std::call_once(flag, [] { std::puts("never: the flag is set"); });
		std::lock_guard<std::mutex> g(m);
		std::printf("thread saw %d tries\n", tries);
	});
	t.join();
	std::printf("tries=%d\n", tries);
}
