/*
 * channel_quit - a master tells its worker process what to do over a
 * socket pair, as nginx's master does (ngx_write_channel: sendmsg of a
 * command, with a descriptor in SCM_RIGHTS for NGX_CMD_OPEN_CHANNEL; the
 * worker's epoll says the channel is readable, then it receives from its
 * end, made non-blocking). The master works a while (no event), sends a
 * descriptor (the read end of a pipe it wrote a line into), works again,
 * then sends "quit". Replay gives epoll_wait its recorded answer at once: the
 * worker receives what the recording did only if its receive waits for the
 * master's send, a hand-off as a pipe's write is, and the descriptor
 * arrives only if the send is made again with its ancillary data.
 *
 * Usage: channel_quit
 */
#include <sys/epoll.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static int send_cmd(int fd, const char *cmd, int pass_fd)
{
	char buf[CMSG_SPACE(sizeof(int))];
	memset(buf, 0, sizeof buf);
	struct iovec iov = {(void *)cmd, 8};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	if (pass_fd >= 0) {
		m.msg_control = buf;
		m.msg_controllen = sizeof buf;
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
	}
	return sendmsg(fd, &m, 0) == 8 ? 0 : -1;
}

/* The next command, as nginx's worker takes it: epoll says the channel is
 * readable, then recvmsg; its descriptor in *got_fd. */
static int wait_cmd(int fd, char cmd[8], int *got_fd)
{
	static int ep = -1;
	if (ep < 0) {
		struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
		ep = epoll_create1(0);
		epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	}
	struct epoll_event got;
	if (epoll_wait(ep, &got, 1, -1) != 1)
		return -1;
	char buf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {cmd, 8};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = buf, .msg_controllen = sizeof buf};
	ssize_t n = recvmsg(fd, &m, 0); /* (non-blocking: epoll said there is something) */
	if (n == 8) {
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		if (c && c->cmsg_type == SCM_RIGHTS)
			memcpy(got_fd, CMSG_DATA(c), sizeof(int));
	}
	return (int)n;
}

/* Work between commands that makes no event (det's replay does not wait
 * for it): about 20 ms. */
static void busy(void)
{
	volatile unsigned long x = 0;
	for (unsigned long i = 0; i < 20000000; i++)
		x += i;
}

int main(void)
{
	int sv[2], p[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) || pipe(p)) {
		perror("socketpair");
		return 1;
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(sv[0]);
		fcntl(sv[1], F_SETFL, O_NONBLOCK); /* as nginx's ngx_nonblocking(channel[1]) */
		char cmd[8];
		int got = -1;
		int r = wait_cmd(sv[1], cmd, &got);
		char line[32] = {0};
		ssize_t n = got >= 0 ? read(got, line, sizeof line - 1) : -1;
		printf("worker: %d bytes '%s', its descriptor gave %zd bytes: %s", r, r > 0 ? cmd : "", n,
		       n > 0 ? line : "\n");
		r = wait_cmd(sv[1], cmd, &got);
		printf("worker: %d bytes '%s'\n", r, r > 0 ? cmd : "");
		fflush(stdout);
		_exit(0);
	}
	close(sv[1]);
	busy();
	if (write(p[1], "through the pipe\n", 17) != 17 || send_cmd(sv[0], "open", p[0]))
		perror("send");
	busy();
	if (send_cmd(sv[0], "quit", -1))
		perror("send");
	int st;
	waitpid(pid, &st, 0);
	printf("master: worker exited %d\n", WEXITSTATUS(st));
	return 0;
}
