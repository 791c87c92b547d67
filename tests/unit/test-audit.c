/*
 * test-audit.c: driver-reported GPU processes against the region, asked
 * for on an event loop that a slow nvidia-smi must not stop.
 */

#include <sys/stat.h>
#include <sys/wait.h>

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "gmux.h"
#include "card-int.h"
#include "unit.h"
#include "fixture.h"

static char	 tooldir[] = "/tmp/gmux-audit-tools.XXXXXX";
static struct event_base *base;

/* nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory ... nounits */
static const char nvidia_out[] =
    "4101, GPU-5d1f0e2a-6b1c-4b6e-9a51-3f0c2d7e8a10, 20480\n"
    "4222, GPU-5d1f0e2a-6b1c-4b6e-9a51-3f0c2d7e8a10, 512\n"
    "4333, GPU-77aa0e2a-6b1c-4b6e-9a51-3f0c2d7e8a11, [N/A]\n"
    "900, GPU-77aa0e2a-6b1c-4b6e-9a51-3f0c2d7e8a11, 300\n";

/* amd-smi process --json, in the shape of amdsmi_proc_info_t. */
static const char amd_out[] =
    "[{\"gpu\": 0, \"process_list\": [{\"process_info\": {\"name\": "
    "\"python3\", \"pid\": 5101, \"memory_usage\": {\"gtt_mem\": {\"value\":"
    " 2, \"unit\": \"MB\"}, \"cpu_mem\": {\"value\": 1, \"unit\": \"MB\"}, "
    "\"vram_mem\": {\"value\": 4096, \"unit\": \"MB\"}}}}]}, {\"gpu\": 1, "
    "\"process_list\": [{\"process_info\": {\"pid\": 5202, \"memory_usage\":"
    " {\"vram_mem\": 1048576}}}]}, {\"gpu\": 2, \"process_list\": "
    "[{\"process_info\": \"No running processes detected\"}]}]";

/* A tree: 4000 keeps job 1 (4101 its child, 4222 a grandchild); 4300
 * keeps job 2 (4333); 900 belongs to nobody. */
static pid_t
fake_parent(pid_t pid)
{
	switch (pid) {
	case 4101:
	case 4200:
		return (4000);
	case 4222:
		return (4200);
	case 4333:
		return (4300);
	case 5101:
		return (5000);
	default:
		return (1);
	}
}

static int
fake_registered(pid_t pid, u_int *job)
{
	return (pid == 4101 || pid == 5101);
}

/* Parses recorded output with a card parser, as cards_procs would. */
static struct card_procs
procs(int (*parse)(const char *, struct card_procs *, char **),
    const char *text)
{
	struct card_procs	 ps = { NULL, 0 };
	char			*cause = NULL;

	if (parse(text, &ps, &cause) != 0) {
		fprintf(stderr, "%s\n", cause);
		unit_failed_checks++;
		free(cause);
	}
	return (ps);
}

static void
test_check(void)
{
	struct card_procs	 ps;
	struct audit_job	 jobs[] = {
		{ 1, 4000, 4ULL << 30, 0, NULL },
		{ 2, 4300, 0, 0, NULL },
		{ 3, 5000, 1ULL << 30, 0, NULL },
	};
	struct audit_offender	*o;
	u_int			 k;

	ps = procs(card_nvidia_parse_apps, nvidia_out);
	k = audit_check(&ps, jobs, 3, fake_parent, fake_registered, &o);
	CHECK(k == 3);
	/* 4222 (job 1) and 4333 (job 2) never registered; 900 is no job's. */
	CHECK(k > 0 && o[0].job == 1 && o[0].pid == 4222 && o[0].stop);
	CHECK(k > 1 && o[1].job == 2 && o[1].pid == 4333 && o[1].stop);
	/* Job 1 holds 20.5 GiB by the driver's count against a 4 GiB cap. */
	CHECK(k > 2 && o[2].job == 1 && o[2].pid == 0 && !o[2].stop);
	free(o);
	card_procs_free(&ps);
	ps = procs(card_amd_parse_procs, amd_out);
	k = audit_check(&ps, jobs, 3, fake_parent, fake_registered, &o);
	CHECK(k == 1 && o[0].job == 3 && o[0].pid == 0);
	free(o);
	card_procs_free(&ps);
	k = audit_check(&ps, jobs, 3, fake_parent, fake_registered, &o);
	CHECK(k == 0 && o == NULL);
}

/*
 * Some amd-smi versions list a process under every GPU it has opened, with
 * its whole VRAM on each: it is one offender, and its memory counts once.
 */
static void
test_check_listed_twice(void)
{
	struct card_procs	 ps;
	struct audit_job	 jobs[] = { { 1, 4000, 3ULL << 30, 0, NULL } };
	struct audit_offender	*o;
	u_int			 k;

	ps = procs(card_amd_parse_procs, "["
	    "{\"gpu\":0,\"process_list\":[{\"process_info\":{\"pid\":4222,"
	    "\"memory_usage\":{\"vram_mem\":{\"value\":3072,"
	    "\"unit\":\"MB\"}}}}]},"
	    "{\"gpu\":1,\"process_list\":[{\"process_info\":{\"pid\":4222,"
	    "\"memory_usage\":{\"vram_mem\":{\"value\":3072,"
	    "\"unit\":\"MB\"}}}}]}]");
	CHECK(ps.n == 2);
	k = audit_check(&ps, jobs, 1, fake_parent, fake_registered, &o);
	CHECK(k == 1 && o[0].pid == 4222 && o[0].stop);
	free(o);
	card_procs_free(&ps);
}

/* One process of the fake tree on gmux card c, holding mem bytes. */
static void
proc_on(struct card_procs *ps, pid_t pid, int c, uint64_t mem)
{
	struct card_proc	*p = card_procs_add(ps);

	p->pid = pid;
	p->vendor = VENDOR_NVIDIA;
	p->card = c;
	p->vendor_index = c;
	p->mem = mem;
}

/*
 * A job on two cards has a cap on each: within each (though more than
 * one card's cap in all) it is not reported; over one card's cap it is,
 * though within its first card's (larger) cap.
 */
static void
test_check_each_card(void)
{
	struct card_procs	 ps = { NULL, 0 };
	uint64_t		 cmem[3] = { 8ULL << 30, 2ULL << 30, 0 };
	struct audit_job	 jobs[] = {
		{ 1, 4000, 10ULL << 30, 0x3, cmem },
	};
	struct audit_offender	*o;
	u_int			 k;

	proc_on(&ps, 4101, 0, 7ULL << 30);
	proc_on(&ps, 4222, 1, 2ULL << 30);
	k = audit_check(&ps, jobs, 1, fake_parent, fake_registered, &o);
	CHECK(k == 1 && o[0].pid == 4222 && o[0].stop);
	free(o);
	card_procs_free(&ps);

	proc_on(&ps, 4101, 1, 5ULL << 30);
	k = audit_check(&ps, jobs, 1, fake_parent, fake_registered, &o);
	CHECK(k == 1 && o[0].pid == 0 && o[0].card == 1 && !o[0].stop);
	free(o);
	card_procs_free(&ps);
}

/* Writes the fake nvidia-smi the audit runs. */
static void
tool(const char *script)
{
	fixture_tool(tooldir, "nvidia-smi", script);
}

struct scan {
	int	 called;
	u_int	 n;
	int	 card0;		/* the first process's card */
	pid_t	 pid0;
};

static void
scanned(const struct card_procs *ps, void *arg)
{
	struct scan	*sc = arg;

	sc->called++;
	sc->n = ps->n;
	sc->card0 = ps->n > 0 ? ps->v[0].card : -2;
	sc->pid0 = ps->n > 0 ? ps->v[0].pid : 0;
}

/* Turns the loop until the scan's answer comes, or ms pass. */
static void
turn(struct scan *sc, int ms)
{
	struct timeval	 tick = { 0, 10000 };
	int64_t		 end = clock_mono_ms() + ms;

	while (!sc->called && clock_mono_ms() < end) {
		event_base_loopexit(base, &tick);
		event_base_dispatch(base);
	}
}

/* One real NVIDIA card, as nvidia-smi named it. */
static struct cards
one_card(void)
{
	struct cards	 cs = { NULL, 0 };
	struct card	*c;

	c = cards_add(&cs);
	c->vendor = VENDOR_NVIDIA;
	c->vendor_index = 0;
	c->uuid = xstrdup("GPU-5d1f0e2a-6b1c-4b6e-9a51-3f0c2d7e8a10");
	c->model = xstrdup("NVIDIA H100");
	return (cs);
}

/*
 * A scan starts the tool and returns; the answer comes through the loop,
 * matched to the cards.  Only one scan runs at a time.
 */
static void
test_start(void)
{
	struct cards	 cs = one_card(), fake = { NULL, 0 };
	struct scan	 sc, sc2;
	char		*cause = NULL;
	int64_t		 t0;

	tool("sleep 0.3\ncat <<EOF\n4101, GPU-5d1f0e2a-6b1c-4b6e-9a51-"
	    "3f0c2d7e8a10, 20480\n900, GPU-77aa0e2a-6b1c-4b6e-9a51-3f0c2d7e8a11"
	    ", 300\nEOF");
	memset(&sc, 0, sizeof sc);
	memset(&sc2, 0, sizeof sc2);
	t0 = clock_mono_ms();
	CHECK(audit_start(&cs, scanned, &sc) == 0);
	CHECK(clock_mono_ms() - t0 < 200);	/* it did not wait */
	CHECK(audit_start(&cs, scanned, &sc2) == 1);
	turn(&sc, 5000);
	CHECK(sc.called == 1 && sc.n == 2 && sc.card0 == 0 && sc.pid0 == 4101);
	turn(&sc2, 300);
	CHECK(sc2.called == 0);
	/* A failing tool: an empty answer, and the next scan may start. */
	tool("echo 'NVIDIA-SMI has failed'; exit 9");
	memset(&sc, 0, sizeof sc);
	CHECK(audit_start(&cs, scanned, &sc) == 0);
	turn(&sc, 5000);
	CHECK(sc.called == 1 && sc.n == 0);
	/* Nothing to ask: fake cards only. */
	CHECK(card_fake_parse("1xH100:80G", &fake, &cause) == 0);
	CHECK(audit_start(&fake, scanned, &sc) == 1);
	cards_free(&fake);
	/* A scan cut short still ends, so the next one may start. */
	tool("sleep 10");
	memset(&sc, 0, sizeof sc);
	CHECK(audit_start(&cs, scanned, &sc) == 0);
	proc_async_shutdown();
	CHECK(sc.called == 1 && sc.n == 0);
	tool("exit 0");
	memset(&sc, 0, sizeof sc);
	CHECK(audit_start(&cs, scanned, &sc) == 0);
	turn(&sc, 5000);
	CHECK(sc.called == 1);
	cards_free(&cs);
}

/*
 * Acting on a scan: a job's GPU process that never registered (no region
 * here) is stopped, or only reported when the policy says so.
 */
static void
test_act(void)
{
	struct card_procs	 ps = { NULL, 0 };
	struct card_proc	*p;
	struct audit_job	 job = { 7, 0, 0, 0, NULL };
	struct audit_offender	*o;
	pid_t			 child;
	int			 ws = 0;

	job.keeper = getpid();
	if ((child = fork()) == 0) {
		pause();
		_exit(0);
	}
	p = card_procs_add(&ps);
	p->pid = child;
	p->vendor = VENDOR_NVIDIA;
	CHECK(audit_act(&ps, &job, 1, 1, &o) == 1);
	CHECK(o[0].job == 7 && o[0].pid == child && o[0].stop);
	free(o);
	usleep(50000);
	CHECK(waitpid(child, &ws, WNOHANG) == 0);	/* reported only */
	CHECK(audit_act(&ps, &job, 1, 0, &o) == 1);
	free(o);
	CHECK(waitpid(child, &ws, 0) == child);
	CHECK(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);
	card_procs_free(&ps);
}

static void
test_parent(void)
{
	CHECK(audit_parent(getpid()) == getppid());
	CHECK(audit_parent(0x7ffffff0) == 0);
}

int
main(void)
{
	char	*path;

	if (mkdtemp(tooldir) == NULL) {
		perror("test-audit");
		return (1);
	}
	xasprintf(&path, "%s:/usr/bin:/bin", tooldir);
	setenv("PATH", path, 1);
	free(path);
	base = event_base_new();
	proc_async_init(base);
	RUN(test_check);
	RUN(test_check_listed_twice);
	RUN(test_check_each_card);
	RUN(test_start);
	RUN(test_act);
	RUN(test_parent);
	proc_async_init(NULL);
	event_base_free(base);
	xasprintf(&path, "%s/nvidia-smi", tooldir);
	unlink(path);
	free(path);
	rmdir(tooldir);
	UNIT_EXIT();
}
