/* tests/programs/sockopt_conn.c - options and names of TCP connections the
 * program makes to itself (a server's accepted connection, a client's
 * non-blocking connect): setsockopt(TCP_NODELAY) as nginx does on its
 * keep-alive connections, getsockopt, getsockname, getpeername. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void show(const char *what, int r)
{
	if (r < 0)
		printf("%s: -1 %s\n", what, strerror(errno));
	else
		printf("%s: %d\n", what, r);
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	int l = socket(AF_INET, SOCK_STREAM, 0);
	int one = 1;
	show("SO_REUSEADDR", setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	bind(l, (struct sockaddr *)&a, sizeof(a));
	listen(l, 4);
	socklen_t al = sizeof(a);
	getsockname(l, (struct sockaddr *)&a, &al);
	int c = socket(AF_INET, SOCK_STREAM, 0);
	fcntl(c, F_SETFL, O_NONBLOCK);
	int r = connect(c, (struct sockaddr *)&a, sizeof(a));
	printf("connect: %s\n", r == 0 ? "done" : errno == EINPROGRESS ? "in progress" : strerror(errno));
	struct pollfd p = {c, POLLOUT, 0};
	poll(&p, 1, 1000);
	int err = -1;
	socklen_t el = sizeof(err);
	show("SO_ERROR", getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &el));
	printf("error %d len %u\n", err, (unsigned)el);
	int s = accept(l, NULL, NULL);
	show("TCP_NODELAY on the accepted one", setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)));
	int v = 0;
	socklen_t vl = sizeof(v);
	show("getsockopt TCP_NODELAY", getsockopt(s, IPPROTO_TCP, TCP_NODELAY, &v, &vl));
	printf("nodelay %d\n", v != 0);
	struct sockaddr_in me, peer, cl;
	socklen_t ml = sizeof(me), pl = sizeof(peer), cll = sizeof(cl);
	show("getsockname", getsockname(s, (struct sockaddr *)&me, &ml));
	show("getpeername", getpeername(s, (struct sockaddr *)&peer, &pl));
	getsockname(c, (struct sockaddr *)&cl, &cll);
	printf("family %d/%d, server port is the listener's: %d, peer is the client: %d\n", me.sin_family,
	       peer.sin_family, me.sin_port == a.sin_port, peer.sin_port == cl.sin_port);
	close(s);
	close(c);
	close(l);
	return 0;
}
