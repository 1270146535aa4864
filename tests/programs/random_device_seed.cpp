/*
 * tests/programs/random_device_seed.cpp - the C++ way to seed: a
 * std::random_device (libstdc++ reads rdrand or rdseed where the CPU has
 * them, else getentropy or /dev/urandom), an mt19937 seeded from it, and
 * argv[1] threads (default 3) each drawing from its own engine seeded by
 * the device. Prints the seeds, each thread's draw and the entropy
 * estimate. Usage: random_device_seed [THREADS] [TOKEN]
 */
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char **argv)
{
	int n = argc > 1 ? std::atoi(argv[1]) : 3;
	std::random_device rd = argc > 2 ? std::random_device(std::string(argv[2])) : std::random_device();
	std::vector<unsigned> seeds;
	for (int i = 0; i < n; i++)
		seeds.push_back(rd());
	std::vector<unsigned long> draws(n);
	std::vector<std::thread> threads;
	for (int i = 0; i < n; i++)
		threads.emplace_back([&, i] {
			std::mt19937 engine(seeds[i]);
			draws[i] = engine();
		});
	for (auto &t : threads)
		t.join();
	for (int i = 0; i < n; i++)
		std::printf("seed %u draw %lu\n", seeds[i], draws[i]);
	std::printf("entropy %.1f\n", rd.entropy());
	return 0;
}
