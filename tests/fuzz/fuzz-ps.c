/*
 * fuzz-ps.c: what podman ps -a --format CONTAINER_PS_FORMAT prints, a
 * line a container ("ID JOB"), as the orphan sweeps read it
 * (container_orphans).  Each orphan it names is a job that is not
 * running, and comes from a line that is exactly a container's ID in
 * hexadecimal, one space and that job's number in decimal (no sign, no
 * leading zero, no trailing text): a label podman could not have
 * printed for gmux's own container names no job, so removes nothing.
 * seeds: tests/fuzz/seeds/ps/
 */

#include "fuzz.h"
#include "container-int.h"

struct found {
	const char	*text;		/* the input as it came */
	u_int		 n;
};

/* Every third job "runs", so both answers are asked. */
static int
fuzz_running(u_int id)
{
	return (id % 3 == 0);
}

/* Is "HEX ID" a whole line of text? */
static int
fuzz_has_line(const char *text, u_int id)
{
	const char	*line, *sp, *end;
	char		 want[16];

	snprintf(want, sizeof want, " %u", id);
	for (line = text; *line != '\0'; line = end + (*end == '\n')) {
		end = line + strcspn(line, "\n");
		sp = line + strspn(line, "0123456789abcdef");
		if (sp != line && sp - line <= 64 &&
		    (size_t)(end - sp) == strlen(want) &&
		    strncmp(sp, want, end - sp) == 0)
			return (1);
		if (*end == '\0')
			break;
	}
	return (0);
}

static void
fuzz_orphan(u_int id, void *arg)
{
	struct found	*f = arg;

	FUZZ_ASSERT(id != 0 && !fuzz_running(id));
	FUZZ_ASSERT(fuzz_has_line(f->text, id));
	f->n++;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct found	 f;
	char		*text, *out;
	size_t		 lines = 1, i;

	if (memchr(data, '\0', size) != NULL)
		return (0);	/* (podman's output is text) */
	text = fuzz_text(data, size);
	out = xstrdup(text);
	for (i = 0; i < size; i++)
		lines += data[i] == '\n';
	f.text = text;
	f.n = 0;
	container_orphans(out, fuzz_running, fuzz_orphan, &f);
	FUZZ_ASSERT(f.n <= lines);
	free(out);
	free(text);
	return (0);
}
