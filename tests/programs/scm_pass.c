/* tests/programs/scm_pass.c - descriptors and credentials passed over unix
 * sockets (SCM_RIGHTS, SCM_CREDENTIALS): from a forked child over a socket
 * pair made before the fork (nginx's channel to its workers), and over a
 * unix socket the program listens on and connects to itself (a socket det
 * treats as the outside world). The receiver uses each descriptor it got. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static ssize_t send_fd(int sock, int fd, const char *tag)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	memset(cbuf, 0, sizeof(cbuf));
	struct iovec iov = {(void *)tag, strlen(tag)};
	struct msghdr m = {0};
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = cbuf;
	m.msg_controllen = sizeof(cbuf);
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &m, 0);
}

/* Receive one message; print its bytes, the fd it carried (read from) and
 * whether credentials came with it, and which. */
static void receive(int sock, int flags)
{
	char data[32] = {0};
	union {
		char buf[256];
		struct cmsghdr align;
	} cb;
	struct iovec iov = {data, sizeof(data) - 1};
	struct msghdr m = {0};
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = cb.buf;
	m.msg_controllen = sizeof(cb.buf);
	ssize_t n = recvmsg(sock, &m, flags);
	if (n < 0) {
		printf("recvmsg: %s\n", strerror(errno));
		return;
	}
	printf("recvmsg %zd '%s' controllen %zu flags %d\n", n, data, (size_t)m.msg_controllen, m.msg_flags);
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			int fd;
			memcpy(&fd, CMSG_DATA(c), sizeof(fd));
			char got[64] = {0};
			ssize_t k = read(fd, got, sizeof(got) - 1);
			int cloexec = fcntl(fd, F_GETFD) & FD_CLOEXEC;
			printf("  rights: fd %d cloexec %d read %zd '%s'\n", fd, cloexec, k, k > 0 ? got : "");
			close(fd);
		} else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
			struct ucred u;
			memcpy(&u, CMSG_DATA(c), sizeof(u));
			printf("  credentials: pid is %s, uid %s\n",
			       u.pid == getpid() ? "mine" : u.pid == getppid() ? "my parent's" : "another's",
			       u.uid == getuid() ? "mine" : "another's");
		} else {
			printf("  cmsg level %d type %d\n", c->cmsg_level, c->cmsg_type);
		}
	}
}



int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);

	/* 1. a child passes the read end of a pipe it filled */
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		return 1;
	pid_t pid = fork();
	if (pid == 0) {
		close(sv[0]);
		int p[2];
		pipe(p);
		write(p[1], "from the child's pipe", 21);
		close(p[1]);
		send_fd(sv[1], p[0], "fd1");
		close(p[0]);
		char ack;
		read(sv[1], &ack, 1);
		_exit(0);
	}
	close(sv[1]);
	receive(sv[0], MSG_PEEK); /* the peek passes the descriptor too */
	receive(sv[0], 0);
	write(sv[0], "k", 1);
	int status;
	waitpid(pid, &status, 0);
	printf("child exit %d\n", WEXITSTATUS(status));

	/* 2. a thread-free pair in one process, with credentials asked for,
	 * and MSG_CMSG_CLOEXEC */
	int one = 1, dp[2];
	socketpair(AF_UNIX, SOCK_DGRAM, 0, dp);
	setsockopt(dp[0], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one));
	int p[2];
	pipe(p);
	write(p[1], "same process", 12);
	send_fd(dp[1], p[0], "fd2");
	close(p[0]);
	close(p[1]);
	receive(dp[0], MSG_CMSG_CLOEXEC);

	/* 3. over a unix socket the program listens on */
	char path[64];
	snprintf(path, sizeof(path), "/tmp/scm_pass.%d.sock", (int)getpid());
	unlink(path);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	strcpy(a.sun_path, path);
	int l = socket(AF_UNIX, SOCK_STREAM, 0);
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(l, 1) != 0) {
		printf("bind: %s\n", strerror(errno));
		return 1;
	}
	int c = socket(AF_UNIX, SOCK_STREAM, 0);
	connect(c, (struct sockaddr *)&a, sizeof(a));
	int s = accept(l, NULL, NULL);
	unlink(path);
	pipe(p);
	write(p[1], "over a listening socket", 23);
	close(p[1]);
	printf("sendmsg %zd\n", send_fd(c, p[0], "fd3"));
	close(p[0]);
	receive(s, 0);
	close(c);
	close(s);
	close(l);
	return 0;
}
