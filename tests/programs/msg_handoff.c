/*
 * msg_handoff.c - a producer thread fills a slot, then sends its number
 * through a message queue (System V msgsnd, or POSIX mq_send with the
 * argument "posix"); the consumer receives the number and reads the slot.
 * The queue is the only happens-before between the store and the read: a
 * replay that lets a receive return before its send finds the slot empty.
 *
 * With "sysv-fork" the producer is a child process that _exits after its
 * last send (the slots are then its own: only the messages are checked).
 *
 * Usage: msg_handoff [sysv|posix|sysv-fork] [ITEMS]   (default sysv, 200)
 */
#include <fcntl.h>
#include <mqueue.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_ITEMS 10000

struct message {
	long type;
	int item;
};

static int posix, forked, items, sysv_queue;
static mqd_t posix_queue;
static volatile long slots[MAX_ITEMS];

static long work(int item)
{
	long s = 0;
	for (long i = 0; i < 20000; i++)
		s += (i ^ item) % 7;
	return s;
}

static void *producer(void *arg)
{
	(void)arg;
	for (int i = 0; i < items; i++) {
		slots[i] = work(i) + 1; /* never 0 */
		struct message m = {1, i};
		int r = posix ? mq_send(posix_queue, (char *)&m.item, sizeof(m.item), 0)
			      : msgsnd(sysv_queue, &m, sizeof(m.item), 0);
		if (r != 0) {
			perror("send");
			exit(2);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	posix = argc > 1 && strcmp(argv[1], "posix") == 0;
	forked = argc > 1 && strcmp(argv[1], "sysv-fork") == 0;
	items = argc > 2 ? atoi(argv[2]) : 200;
	if (items < 1 || items > MAX_ITEMS)
		return 2;
	char name[64];
	if (posix) {
		snprintf(name, sizeof(name), "/det_msg_handoff_%d", (int)getpid());
		struct mq_attr attr = {.mq_maxmsg = 8, .mq_msgsize = sizeof(int)};
		posix_queue = mq_open(name, O_CREAT | O_RDWR | O_EXCL, 0600, &attr);
		if (posix_queue == (mqd_t)-1) {
			perror("mq_open");
			return 2;
		}
	} else if ((sysv_queue = msgget(IPC_PRIVATE, IPC_CREAT | 0600)) < 0) {
		perror("msgget");
		return 2;
	}
	pthread_t t;
	pid_t child = 0;
	fflush(stdout);
	if (forked && (child = fork()) == 0) {
		producer(NULL);
		_exit(0);
	}
	if (!forked)
		pthread_create(&t, NULL, producer, NULL);
	int empty = 0;
	for (int i = 0; i < items; i++) {
		struct message m;
		ssize_t n = posix ? mq_receive(posix_queue, (char *)&m.item, sizeof(m.item), NULL)
				  : msgrcv(sysv_queue, &m, sizeof(m.item), 0, 0);
		if (n != (ssize_t)sizeof(m.item)) {
			perror("receive");
			return 2;
		}
		if (m.item != i)
			return 3; /* one sender: its order */
		if (!forked && slots[m.item] == 0)
			empty++;
	}
	int status = 0;
	if (forked)
		waitpid(child, &status, 0);
	else
		pthread_join(t, NULL);
	if (status != 0)
		return 2;
	if (posix)
		mq_unlink(name);
	else
		msgctl(sysv_queue, IPC_RMID, NULL);
	printf("%d items, %d received before their slot was filled\n", items, empty);
	return empty != 0;
}
