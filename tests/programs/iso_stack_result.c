/*
 * iso_stack_result - threads write their results into variables of the
 * creating thread's stack frame (a common pattern: pthread_create(&t, 0,
 * f, &result)), and a worker passes a pointer to its own stack to a
 * thread it creates. Under detrun --isolated stacks are isolated memory
 * too, committed like globals: the results arrive at the join.
 *
 * Output: "results 1 4 9 16, nested 42".
 */
#include <pthread.h>
#include <stdio.h>

struct job {
	long in, out;
};

static void *square(void *arg)
{
	struct job *j = arg;
	j->out = j->in * j->in;
	return NULL;
}

static void *answer(void *arg)
{
	*(long *)arg = 42;
	return NULL;
}

static void *nested(void *arg)
{
	long mine = 0; /* on this thread's own stack */
	pthread_t t;
	pthread_create(&t, NULL, answer, &mine);
	pthread_join(t, NULL);
	*(long *)arg = mine;
	return NULL;
}

int main(void)
{
	struct job jobs[4];
	pthread_t t[4], n;
	long got = 0;
	for (int i = 0; i < 4; i++) {
		jobs[i].in = i + 1;
		jobs[i].out = -1;
		pthread_create(&t[i], NULL, square, &jobs[i]);
	}
	pthread_create(&n, NULL, nested, &got);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	pthread_join(n, NULL);
	printf("results %ld %ld %ld %ld, nested %ld\n", jobs[0].out, jobs[1].out, jobs[2].out, jobs[3].out, got);
	return 0;
}
