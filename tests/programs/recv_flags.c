/* tests/programs/recv_flags.c - recv's flags and recvmsg's msg_flags, on a
 * socket pair of the program's own and on a UDP socket (a socket det treats
 * as the outside world): MSG_DONTWAIT on an empty socket, MSG_PEEK,
 * MSG_TRUNC (the datagram's length, not the copied one), MSG_WAITALL
 * across a writer's pieces, and MSG_TRUNC / MSG_CTRUNC reported out; on a
 * TCP connection over loopback, MSG_DONTWAIT in recv, recvfrom and recvmsg,
 * and MSG_TRUNC, which there discards the bytes (det copied them from a
 * NULL buffer and crashed). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void show(const char *what, ssize_t r)
{
	if (r < 0)
		printf("%s: -1 %s\n", what, strerror(errno));
	else
		printf("%s: %zd\n", what, r);
}

/* a datagram socket `rx` that `send1` sends into */
static void datagrams(const char *name, int rx, int tx, const struct sockaddr *to, socklen_t tolen)
{
	char buf[64];
	printf("-- %s\n", name);
	show("dontwait empty", recv(rx, buf, sizeof(buf), MSG_DONTWAIT));
	sendto(tx, "0123456789", 10, 0, to, tolen);
	show("peek|trunc NULL 0", recv(rx, NULL, 0, MSG_PEEK | MSG_TRUNC));
	show("peek 4", recv(rx, buf, 4, MSG_PEEK));
	printf("peeked %.4s\n", buf);
	struct iovec iov = {buf, 4};
	struct msghdr m = {0};
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	show("recvmsg 4 of 10", recvmsg(rx, &m, 0));
	printf("msg_flags trunc=%d got %.4s\n", !!(m.msg_flags & MSG_TRUNC), buf);
	sendto(tx, "abcdefghij", 10, 0, to, tolen);
	show("recvfrom trunc 3", recvfrom(rx, buf, 3, MSG_TRUNC, NULL, NULL));
	show("dontwait empty again", recv(rx, buf, sizeof(buf), MSG_DONTWAIT));
}

static void tcp(void)
{
	printf("-- tcp loopback\n");
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	bind(l, (struct sockaddr *)&a, sizeof(a));
	listen(l, 1);
	socklen_t al = sizeof(a);
	getsockname(l, (struct sockaddr *)&a, &al);
	int c = socket(AF_INET, SOCK_STREAM, 0);
	connect(c, (struct sockaddr *)&a, sizeof(a));
	int s = accept(l, NULL, NULL);
	char buf[64];
	show("dontwait empty", recv(s, buf, sizeof(buf), MSG_DONTWAIT));
	show("recvfrom dontwait empty", recvfrom(s, buf, sizeof(buf), MSG_DONTWAIT, NULL, NULL));
	struct iovec iov = {buf, sizeof(buf)};
	struct msghdr m = {0};
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	show("recvmsg dontwait empty", recvmsg(s, &m, MSG_DONTWAIT));
	send(c, "0123456789", 10, 0);
	show("peek 4 (waitall)", recv(s, buf, 4, MSG_PEEK | MSG_WAITALL));
	show("trunc discards 3 (NULL)", recv(s, NULL, 3, MSG_TRUNC | MSG_WAITALL));
	memset(buf, 0, sizeof(buf));
	show("trunc discards 2 (buffer)", recv(s, buf, 2, MSG_TRUNC | MSG_WAITALL));
	printf("buffer untouched %d\n", buf[0] == 0);
	show("the rest", recv(s, buf, 5, MSG_WAITALL));
	printf("got %.5s\n", buf);
	close(c);
	close(s);
	close(l);
}

static int stream_tx;

static void *slow_writer(void *arg)
{
	(void)arg;
	for (int i = 0; i < 4; i++) {
		usleep(20000);
		write(stream_tx, "wxyz", 4);
	}
	return NULL;
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	int dg[2];
	socketpair(AF_UNIX, SOCK_DGRAM, 0, dg);
	datagrams("socketpair dgram", dg[0], dg[1], NULL, 0);

	int u = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	bind(u, (struct sockaddr *)&a, sizeof(a));
	socklen_t al = sizeof(a);
	getsockname(u, (struct sockaddr *)&a, &al);
	datagrams("udp loopback", u, u, (struct sockaddr *)&a, sizeof(a));

	/* a stream of the program's own */
	int st[2];
	socketpair(AF_UNIX, SOCK_STREAM, 0, st);
	char buf[64] = {0};
	printf("-- socketpair stream\n");
	show("dontwait empty", recv(st[0], buf, sizeof(buf), MSG_DONTWAIT));
	write(st[1], "hello world", 11);
	show("peek 5", recv(st[0], buf, 5, MSG_PEEK));
	show("peek 5 again", recv(st[0], buf, 5, MSG_PEEK));
	show("read all", recv(st[0], buf, sizeof(buf), 0));
	printf("got %.11s\n", buf);
	stream_tx = st[1];
	pthread_t w;
	pthread_create(&w, NULL, slow_writer, NULL);
	show("waitall 16", recv(st[0], buf, 16, MSG_WAITALL));
	printf("got %.16s\n", buf);
	pthread_join(w, NULL);

	/* control data that does not fit: MSG_CTRUNC */
	int fds[2];
	pipe(fds);
	char cbuf[CMSG_SPACE(sizeof(int))];
	memset(cbuf, 0, sizeof(cbuf));
	struct iovec iov = {"x", 1};
	struct msghdr m = {0};
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = cbuf;
	m.msg_controllen = sizeof(cbuf);
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fds[0], sizeof(int));
	show("sendmsg rights", sendmsg(st[1], &m, 0));
	struct iovec riov = {buf, sizeof(buf)};
	struct msghdr r = {0};
	r.msg_iov = &riov;
	r.msg_iovlen = 1;
	r.msg_control = cbuf;
	r.msg_controllen = 4; /* too small for any cmsg */
	show("recvmsg no room for rights", recvmsg(st[0], &r, 0));
	printf("msg_flags ctrunc=%d controllen=%zu\n", !!(r.msg_flags & MSG_CTRUNC), (size_t)r.msg_controllen);
	tcp();
	return 0;
}
