/* tests/projects/atomics/main.c - two threads add to the library's counter;
 * built by make, CMake and autotools (the folders here;
 * det's tests copy one next to these sources) with CC=det-cc in det's tests. */
#include <pthread.h>
#include <stdio.h>

#include "counter.h"

static void *adder(void *arg)
{
	for (long i = 0; i < 1000; i++)
		counter_add((long)arg);
	return NULL;
}

int main(void)
{
	pthread_t a, b;
	pthread_create(&a, NULL, adder, (void *)1);
	pthread_create(&b, NULL, adder, (void *)2);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	printf("total %ld\n", counter_get());
	return 0;
}
