/* tests/programs/ticket_check.c - check-then-act on a ticket count, after
 * noise: two sellers each take a noise lock many times (so that two runs
 * order many events differently), then sell while tickets are left: the
 * check (tickets > 0) and the sale (tickets--) are two critical sections
 * of `tickets_lock`. When one seller's check of the last ticket runs
 * before the other's sale of it, both sell it: "BUG: oversold" and exit 1.
 * For detdiff --bisect: the pair is one seller's check and the other's sale.
 *
 * Usage: ticket_check [NOISE]   (default 200 noise sections per seller) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t tickets_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t noise_lock = PTHREAD_MUTEX_INITIALIZER;
static long tickets = 3, noise_rounds = 200, noise;

static int check_ticket(void)
{
	pthread_mutex_lock(&tickets_lock);
	int left = tickets > 0;
	pthread_mutex_unlock(&tickets_lock);
	return left;
}

static void sell_ticket(void)
{
	pthread_mutex_lock(&tickets_lock);
	tickets--;
	pthread_mutex_unlock(&tickets_lock);
}

static void *seller(void *arg)
{
	(void)arg;
	for (long i = 0; i < noise_rounds; i++) {
		pthread_mutex_lock(&noise_lock);
		noise++;
		pthread_mutex_unlock(&noise_lock);
	}
	while (check_ticket())
		sell_ticket();
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		noise_rounds = atol(argv[1]);
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, seller, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	if (tickets < 0) {
		printf("BUG: oversold (%ld tickets)\n", tickets);
		return 1;
	}
	printf("ok: sold out\n");
	return 0;
}
