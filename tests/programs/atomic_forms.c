/*
 * atomic_forms - two threads using one set of shared locations through
 * each instruction form gcc makes of __atomic builtins (lock xadd of each
 * width, lock add/sub/or/and/xor with an immediate or a register, lock bts,
 * xchg, a cmpxchg loop whose first try may fail, a sub whose flags decide
 * a branch, indexed and RIP-relative addresses, a seq_cst fence), each
 * thread folding the values
 * the operations returned into a checksum of its own: the checksums depend
 * on how the threads interleaved, so a replay that prints the recorded ones
 * ran every atomic in the recorded order with the recorded outcome.
 * Built with plain gcc (no det-cc): det sees these only with
 * detrec --patch-atomics. (No value here comes from a plain load: an atomic
 * load is a mov, which det does not see, and a compare-exchange whose
 * expected value came from one may fail in a replay where it succeeded.)
 * Usage: atomic_forms [ROUNDS]   (default 2000)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint8_t b8;
static uint16_t h16;
static uint32_t w32, bits, zeros;
static uint64_t q64, slots[8];
static int rounds;

static void *worker(void *arg)
{
	uint64_t sum = (uintptr_t)arg, seen = 0;
	for (int i = 0; i < rounds; i++) {
		sum = sum * 31 + __atomic_fetch_add(&b8, 1, __ATOMIC_SEQ_CST);           /* lock xadd %al */
		sum = sum * 31 + __atomic_fetch_add(&h16, 3, __ATOMIC_SEQ_CST);          /* lock xadd %ax */
		sum = sum * 31 + __atomic_fetch_sub(&w32, 5, __ATOMIC_SEQ_CST);          /* lock xadd %eax */
		__atomic_add_fetch(&q64, (uint64_t)i, __ATOMIC_SEQ_CST);                 /* lock add %reg */
		__atomic_or_fetch(&h16, 0x100, __ATOMIC_SEQ_CST);                       /* lock orw $imm */
		__atomic_and_fetch(&w32, ~0x10u, __ATOMIC_SEQ_CST);                     /* lock andl $imm */
		__atomic_xor_fetch(&b8, 0x5a, __ATOMIC_SEQ_CST);                        /* lock xorb $imm */
		__atomic_or_fetch(&bits, 1u << (i % 32), __ATOMIC_SEQ_CST);             /* lock or %reg */
		__atomic_and_fetch(&bits, ~(1u << ((i + 7) % 32)), __ATOMIC_SEQ_CST);  /* lock and %reg */
		if (__atomic_sub_fetch(&zeros, 1, __ATOMIC_SEQ_CST) == 0)              /* lock sub; flags */
			sum += 7;
		sum = sum * 31 + __atomic_exchange_n(&slots[i % 8], sum, __ATOMIC_SEQ_CST); /* xchg, indexed */
		uint64_t old = seen; /* (a guess: the first try may fail, and load the value) */
		while (!__atomic_compare_exchange_n(&q64, &old, old * 3 + 1, 0, __ATOMIC_SEQ_CST,
						    __ATOMIC_RELAXED)) /* lock cmpxchg */
			sum++;
		seen = old * 3 + 1;
		sum = sum * 31 + old;
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	}
	return (void *)(uintptr_t)sum;
}

int main(int argc, char **argv)
{
	rounds = argc > 1 ? atoi(argv[1]) : 2000;
	zeros = (uint32_t)rounds;
	pthread_t t[2];
	for (uintptr_t i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, (void *)(i + 1));
	for (int i = 0; i < 2; i++) {
		void *r;
		pthread_join(t[i], &r);
		printf("thread %d checksum %016llx\n", i + 1, (unsigned long long)(uintptr_t)r);
	}
	printf("b8 %u h16 %u w32 %u q64 %llu bits %x zeros %u\n", b8, h16, w32, (unsigned long long)q64, bits, zeros);
	return 0;
}
