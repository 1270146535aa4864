/*
 * iso_heap - det's heap in isolated mode (isolated/heap.c) under use: each
 * of 3 threads allocates, frees and reallocates blocks of many sizes
 * (0 bytes too: a freed block must hold its free-list link), aligned ones,
 * and hands a list to the main thread, which frees it. Checks every byte.
 *
 * glibc's regcomp allocates 0-byte sets and frees them (bash's =~ crashed
 * under 16-byte blocks).
 *
 * Output: "ok: <sum>" (the same sum natively and isolated), or "BAD: ...".
 */
#include <pthread.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct node {
	struct node *next;
	size_t len;
	unsigned char data[];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct node *handed;

static void *worker(void *arg)
{
	long id = (long)arg;
	void *keep[64] = {0};
	for (int i = 0; i < 10; i++) { /* neighbours of 0 bytes, freed in order */
		void *a = malloc(0), *b = malloc(0);
		free(a);
		free(b);
	}
	for (int round = 0; round < 200; round++) {
		size_t n = (size_t)((round * 37 + id * 11) % 5000);
		int k = round % 64;
		free(keep[k]);
		keep[k] = malloc(round % 7 == 0 ? 0 : n);
		if (n && round % 7)
			memset(keep[k], (int)(id + round), n);
		void *a = NULL;
		if (posix_memalign(&a, 64 << (round % 4), 100) || ((uintptr_t)a & ((64u << (round % 4)) - 1)))
			printf("BAD: posix_memalign\n");
		free(a);
		char *r = realloc(NULL, 10);
		memcpy(r, "abcdefghi", 10);
		r = realloc(r, 100000);
		if (strcmp(r, "abcdefghi"))
			printf("BAD: realloc lost bytes\n");
		free(r);
	}
	for (int i = 0; i < 64; i++)
		free(keep[i]);
	struct node *nd = calloc(1, sizeof *nd + 1000);
	nd->len = 1000;
	memset(nd->data, (int)id, nd->len);
	pthread_mutex_lock(&lock);
	nd->next = handed;
	handed = nd;
	pthread_mutex_unlock(&lock);
	return NULL;
}

int main(void)
{
	regex_t re;
	if (regcomp(&re, "^//[^/]*$", REG_EXTENDED) || regexec(&re, "//x", 0, NULL, 0) != 0)
		printf("BAD: regex\n");
	regfree(&re);
	pthread_t t[3];
	for (long i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, worker, (void *)(i + 1));
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	unsigned long sum = 0;
	while (handed) {
		struct node *nd = handed;
		handed = nd->next;
		for (size_t i = 0; i < nd->len; i++)
			sum += nd->data[i];
		free(nd);
	}
	printf("ok: %lu\n", sum);
	return 0;
}
