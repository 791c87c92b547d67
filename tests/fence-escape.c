/*
 * fence-escape: attempts on the fence that need C (Python cannot race a
 * second thread against connect(), drive io_uring or make x32 calls).
 * Each prints one line saying what happened; the escape suite checks the
 * line and, above all, that its listener was not reached.
 *
 *   fence-escape connect ADDR PORT
 *   fence-escape race ADDR ALLOWED DENIED COUNT
 *   fence-escape uring ADDR PORT
 *   fence-escape listener ADDR PORT
 *   fence-escape x32 | i386
 */

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <linux/filter.h>
#include <linux/io_uring.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define nitems_(a) (sizeof (a) / sizeof ((a)[0]))

static struct sockaddr_in
inet(const char *addr, const char *port)
{
	struct sockaddr_in	 sin;

	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)atoi(port));
	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1) {
		fprintf(stderr, "bad address %s\n", addr);
		exit(2);
	}
	return (sin);
}

static int
try_connect(const struct sockaddr_in *sin)
{
	int	 s, rc;

	if ((s = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		return (-errno);
	rc = connect(s, (const struct sockaddr *)sin, sizeof *sin);
	rc = rc == 0 ? 0 : -errno;
	close(s);
	return (rc);
}

/* A plain connect; as a setuid copy it also shows no_new_privs at work. */
static int
cmd_connect(char **argv)
{
	struct sockaddr_in	 sin = inet(argv[0], argv[1]);
	int			 rc = try_connect(&sin);

	printf("euid=%d connect=%s\n", (int)geteuid(),
	    rc == 0 ? "ok" : strerror(-rc));
	return (0);
}

static struct {
	_Atomic uint16_t	*port;
	uint16_t		 a, b;
	atomic_int		 stop;
} race;

static void *
flipper(void *arg)
{
	while (!atomic_load(&race.stop)) {
		atomic_store(race.port, race.a);
		atomic_store(race.port, race.b);
	}
	return (NULL);
}

/*
 * One thread connects over and over while another rewrites the port in
 * the very sockaddr being passed, between an allowed and a denied one.
 */
static int
cmd_race(char **argv)
{
	static struct sockaddr_in	 sin;
	pthread_t			 t;
	int				 i, n = atoi(argv[3]), ok = 0, no = 0;

	sin = inet(argv[0], argv[1]);
	race.port = (_Atomic uint16_t *)&sin.sin_port;
	race.a = htons((uint16_t)atoi(argv[1]));
	race.b = htons((uint16_t)atoi(argv[2]));
	pthread_create(&t, NULL, flipper, NULL);
	for (i = 0; i < n; i++) {
		if (try_connect(&sin) == 0)
			ok++;
		else
			no++;
	}
	atomic_store(&race.stop, 1);
	pthread_join(t, NULL);
	printf("attempts=%d connected=%d refused=%d\n", n, ok, no);
	return (0);
}

/* io_uring: a connect through IORING_OP_CONNECT, if the ring is allowed. */
static int
cmd_uring(char **argv)
{
	struct sockaddr_in	 sin = inet(argv[0], argv[1]);
	struct io_uring_params	 p;
	struct io_uring_sqe	*sqe;
	struct io_uring_cqe	*cqe;
	u_char			*sq, *cq;
	unsigned		*tail;
	int			 fd, s;

	memset(&p, 0, sizeof p);
	if ((fd = (int)syscall(__NR_io_uring_setup, 4, &p)) == -1) {
		printf("io_uring_setup=%s\n", strerror(errno));
		return (0);
	}
	sq = mmap(NULL, p.sq_off.array + p.sq_entries * sizeof (unsigned),
	    PROT_READ|PROT_WRITE, MAP_SHARED, fd, IORING_OFF_SQ_RING);
	cq = mmap(NULL, p.cq_off.cqes + p.cq_entries * sizeof *cqe,
	    PROT_READ|PROT_WRITE, MAP_SHARED, fd, IORING_OFF_CQ_RING);
	sqe = mmap(NULL, p.sq_entries * sizeof *sqe, PROT_READ|PROT_WRITE,
	    MAP_SHARED, fd, IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || sqe == MAP_FAILED) {
		printf("mmap=%s\n", strerror(errno));
		return (0);
	}
	s = socket(AF_INET, SOCK_STREAM, 0);
	memset(sqe, 0, sizeof *sqe);
	sqe->opcode = IORING_OP_CONNECT;
	sqe->fd = s;
	sqe->addr = (uint64_t)(uintptr_t)&sin;
	sqe->off = sizeof sin;
	((unsigned *)(sq + p.sq_off.array))[0] = 0;
	tail = (unsigned *)(sq + p.sq_off.tail);
	__atomic_store_n(tail, *tail + 1, __ATOMIC_RELEASE);
	if (syscall(__NR_io_uring_enter, fd, 1, 1, IORING_ENTER_GETEVENTS,
	    NULL, 0) == -1) {
		printf("io_uring_enter=%s\n", strerror(errno));
		return (0);
	}
	cqe = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
	printf("io_uring connect=%s\n", cqe->res == 0 ? "ok" :
	    strerror(-cqe->res));
	return (0);
}

static int	nested_fd;

static void *
nested_supervisor(void *arg)
{
	struct seccomp_notif		 req;
	struct seccomp_notif_resp	 resp;

	for (;;) {
		memset(&req, 0, sizeof req);
		if (ioctl(nested_fd, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0)
			return (NULL);
		memset(&resp, 0, sizeof resp);
		resp.id = req.id;
		resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		ioctl(nested_fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	}
}

/*
 * A listener of the job's own, stacked on the fence's, that CONTINUEs
 * every connect: the newest filter wins a tie between two notifies.
 */
static int
cmd_listener(char **argv)
{
	struct sockaddr_in	 sin = inet(argv[0], argv[1]);
	struct sock_filter	 f[] = {
		BPF_STMT(BPF_LD|BPF_W|BPF_ABS, offsetof(struct seccomp_data,
		    nr)),
		BPF_JUMP(BPF_JMP|BPF_JEQ|BPF_K, __NR_connect, 0, 1),
		BPF_STMT(BPF_RET|BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET|BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog	 prog = { nitems_(f), f };
	pthread_t		 t;
	int			 rc;

	nested_fd = (int)syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER,
	    SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (nested_fd == -1) {
		printf("listener=%s\n", strerror(errno));
		return (0);
	}
	pthread_create(&t, NULL, nested_supervisor, NULL);
	rc = try_connect(&sin);
	printf("listener=ok connect=%s\n", rc == 0 ? "ok" : strerror(-rc));
	return (0);
}

/* getpid through the x32 ABI and through int 0x80: both must kill. */
static int
cmd_abi(const char *which)
{
	long	 r = -1;

#if defined(__x86_64__)
	if (strcmp(which, "x32") == 0)
		r = syscall(__NR_getpid | 0x40000000);
	else
		__asm__ volatile ("int $0x80" : "=a"(r) : "a"(20) : "memory");
#endif
	printf("%s=%ld\n", which, r);
	return (0);
}

int
main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc >= 4 && strcmp(argv[1], "connect") == 0)
		return (cmd_connect(argv + 2));
	if (argc >= 6 && strcmp(argv[1], "race") == 0)
		return (cmd_race(argv + 2));
	if (argc >= 4 && strcmp(argv[1], "uring") == 0)
		return (cmd_uring(argv + 2));
	if (argc >= 4 && strcmp(argv[1], "listener") == 0)
		return (cmd_listener(argv + 2));
	if (argc >= 2 && (strcmp(argv[1], "x32") == 0 ||
	    strcmp(argv[1], "i386") == 0))
		return (cmd_abi(argv[1]));
	fprintf(stderr, "usage: fence-escape connect|race|uring|listener|"
	    "x32|i386 ...\n");
	return (2);
}
