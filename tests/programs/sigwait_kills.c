/*
 * tests/programs/sigwait_kills.c - a thread takes SIGUSR1 with sigwait
 * three times; the main thread sends it three times with pthread_kill,
 * sleeping a little after each, and asks the thread's CPU affinity by its
 * kernel id.
 *
 * A relaxed replay skips the sleeps and kept no order between the waits and
 * the sender's next sleep: the three kills came while the first was still
 * pending, made one signal, and the second sigwait waited for ever.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t said = PTHREAD_COND_INITIALIZER;
static pid_t tid;

static void *taker(void *arg)
{
	(void)arg;
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	pthread_mutex_lock(&lock);
	tid = gettid();
	pthread_cond_signal(&said);
	pthread_mutex_unlock(&lock);
	long n = 0;
	for (int i = 0, sig; i < 3; i++)
		n += sigwait(&s, &sig) == 0 && sig == SIGUSR1;
	return (void *)n;
}

int main(void)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &s, NULL); /* (the thread inherits it) */
	pthread_t th;
	if (pthread_create(&th, NULL, taker, NULL))
		return 1;
	pthread_mutex_lock(&lock);
	while (!tid)
		pthread_cond_wait(&said, &lock);
	pthread_mutex_unlock(&lock);
	cpu_set_t cpus;
	CPU_ZERO(&cpus);
	int asked = sched_getaffinity(tid, sizeof(cpus), &cpus);
	int sent = 0;
	for (int i = 0; i < 3; i++) {
		sent += pthread_kill(th, SIGUSR1) == 0;
		usleep(2000);
	}
	void *taken;
	pthread_join(th, &taken);
	printf("affinity asked: %d; sent %d, taken %ld\n", asked, sent, (long)taken);
	return 0;
}
