/*
 * shared_counter - counters in memory a server's processes share, as
 * nginx's workers keep their request statistics (ngx_stat_requests...: an
 * anonymous MAP_SHARED mapping made by the master before it forks, then
 * ngx_atomic_fetch_add in every worker). Two children each make ROUNDS
 * rounds of an addition (lock xadd), an exchange (xchg) and one
 * compare-exchange (lock cmpxchg) on words of that mapping and print a
 * checksum of the values these returned, which depends on how the two
 * processes' atomics interleaved: only a replay that orders the atomics of
 * both processes on one location as the recording did prints the same.
 * (No plain load decides what a round does: that would be a data race
 * det's default mode does not see.) Built with plain gcc: the atomics are det events only with
 * detrec --patch-atomics.
 *
 * Usage: shared_counter [ROUNDS]   (default 3000)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

struct counters {
	uint64_t requests;
	uint64_t last; /* who exchanged last */
	uint64_t word; /* compare-exchanged from i to i + 1 */
};

static void work(struct counters *c, int who, int rounds)
{
	uint64_t sum = 0, mixed = 0;
	for (int i = 0; i < rounds; i++) {
		uint64_t got = __atomic_fetch_add(&c->requests, 1, __ATOMIC_SEQ_CST);
		uint64_t prev = __atomic_exchange_n(&c->last, (uint64_t)who, __ATOMIC_SEQ_CST);
		uint64_t expected = (uint64_t)i;
		int swapped = __atomic_compare_exchange_n(&c->word, &expected, expected + 1, 0, __ATOMIC_SEQ_CST,
							  __ATOMIC_SEQ_CST);
		sum += got;
		mixed = ((mixed * 31 + got) * 31 + prev) * 31 + expected * 2 + (uint64_t)swapped;
	}
	printf("child %d: sum %llu mix %016llx\n", who, (unsigned long long)sum, (unsigned long long)mixed);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 3000;
	struct counters *c = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (c == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	pid_t kids[2];
	for (int who = 0; who < 2; who++) {
		kids[who] = fork();
		if (kids[who] < 0) {
			perror("fork");
			return 1;
		}
		if (kids[who] == 0) {
			work(c, who, rounds);
			_exit(0);
		}
	}
	for (int who = 0; who < 2; who++)
		waitpid(kids[who], NULL, 0);
	printf("total %llu word %llu\n", (unsigned long long)c->requests, (unsigned long long)c->word);
	return 0;
}
