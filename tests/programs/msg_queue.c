/*
 * tests/programs/msg_queue.c - one step on a message queue another process
 * shares (TLPI's pmsg_send/pmsg_receive, svmsg_send/svmsg_receive):
 *   msg_queue posix-send NAME TEXT PRIO | posix-recv NAME | posix-count NAME | posix-unlink NAME
 *   msg_queue posix-own NAME keep|unlink | posix-exists NAME
 *   msg_queue sysv-send ID TYPE TEXT | sysv-recv ID | sysv-count ID | sysv-create | sysv-remove ID
 * Receives do not wait (an empty queue prints the error). The recording
 * drains or fills the queue, so a replay finds it another way. posix-own
 * makes a queue of its own (O_EXCL), passes a message through it, and
 * leaves it (keep: as TLPI's pmsg_create does) or removes it.
 */
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/msg.h>

struct text_msg {
	long type;
	char text[256];
};

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "sysv-create") == 0) {
		int id = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
		printf("%d\n", id);
		return id < 0;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: msg_queue MODE NAME|ID [...]\n");
		return 2;
	}
	const char *mode = argv[1];
	if (strncmp(mode, "posix-", 6) == 0) {
		if (strcmp(mode, "posix-unlink") == 0)
			return mq_unlink(argv[2]) == 0 ? 0 : 1;
		if (strcmp(mode, "posix-exists") == 0) {
			mqd_t q = mq_open(argv[2], O_RDONLY);
			printf("%s\n", q == (mqd_t)-1 ? strerror(errno) : "exists");
			return 0;
		}
		if (strcmp(mode, "posix-own") == 0 && argc == 4) {
			struct mq_attr want = {.mq_maxmsg = 4, .mq_msgsize = 64}, got = {0};
			mqd_t q = mq_open(argv[2], O_RDWR | O_CREAT | O_EXCL, 0600, &want);
			if (q == (mqd_t)-1) {
				perror("mq_open");
				return 1;
			}
			char buf[64];
			unsigned prio = 0;
			mq_send(q, "mine", 4, 2);
			ssize_t n = mq_receive(q, buf, sizeof buf, &prio);
			mq_getattr(q, &got);
			printf("received '%.*s' priority %u; %ld messages of %ld bytes at most\n", (int)n, buf, prio,
			       got.mq_maxmsg, got.mq_msgsize);
			if (strcmp(argv[3], "unlink") == 0 && mq_unlink(argv[2]) != 0) {
				perror("mq_unlink");
				return 1;
			}
			return mq_close(q);
		}
		struct mq_attr attr = {.mq_maxmsg = 4, .mq_msgsize = 64};
		mqd_t q = mq_open(argv[2], O_RDWR | O_CREAT | O_NONBLOCK, 0600, &attr);
		if (q == (mqd_t)-1) {
			perror("mq_open");
			return 1;
		}
		if (strcmp(mode, "posix-send") == 0 && argc == 5) {
			if (mq_send(q, argv[3], strlen(argv[3]), (unsigned)atoi(argv[4])) != 0)
				printf("mq_send: %s\n", strerror(errno));
		} else if (strcmp(mode, "posix-recv") == 0) {
			char buf[64];
			unsigned prio = 0;
			ssize_t n = mq_receive(q, buf, sizeof buf, &prio);
			if (n < 0)
				printf("mq_receive: %s\n", strerror(errno));
			else
				printf("received '%.*s' priority %u\n", (int)n, buf, prio);
		} else if (strcmp(mode, "posix-count") == 0) {
			mq_getattr(q, &attr);
			printf("%ld messages\n", attr.mq_curmsgs);
		}
		return 0;
	}
	int id = atoi(argv[2]);
	struct text_msg m = {0};
	if (strcmp(mode, "sysv-send") == 0 && argc == 5) {
		m.type = atol(argv[3]);
		snprintf(m.text, sizeof m.text, "%s", argv[4]);
		if (msgsnd(id, &m, strlen(m.text), IPC_NOWAIT) != 0)
			printf("msgsnd: %s\n", strerror(errno));
	} else if (strcmp(mode, "sysv-recv") == 0) {
		ssize_t n = msgrcv(id, &m, sizeof m.text, 0, IPC_NOWAIT);
		if (n < 0)
			printf("msgrcv: %s\n", strerror(errno));
		else
			printf("received '%.*s' type %ld\n", (int)n, m.text, m.type);
	} else if (strcmp(mode, "sysv-remove") == 0) {
		return msgctl(id, IPC_RMID, NULL) != 0;
	} else if (strcmp(mode, "sysv-count") == 0) {
		struct msqid_ds ds;
		msgctl(id, IPC_STAT, &ds);
		printf("%lu messages\n", (unsigned long)ds.msg_qnum);
	}
	return 0;
}
