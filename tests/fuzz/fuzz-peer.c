/*
 * fuzz-peer.c: what a member's call reads from others (cluster-peer.c):
 * a member record's ADDR (cluster_peer_split), the owner a peer says it
 * acts for (cluster_peer_owner_ok), and the CLI's reading of a job id as
 * a cluster job's (cmd_cluster_id).  Input: the three, one a line.
 * seeds: tests/fuzz/seeds/peer/
 */

#include "fuzz.h"
#include "cluster-int.h"

static void
fuzz_addr(const char *addr)
{
	char	*host = NULL;
	u_int	 port = 0;

	if (cluster_peer_split(addr, "member", &host, &port) != 0) {
		FUZZ_ASSERT(host == NULL);
		return;
	}
	FUZZ_ASSERT(port >= 1 && port <= 65535);
	FUZZ_ASSERT(host != NULL && *host != '\0');
	/* A host with a colon came bracketed: IPv6, brackets taken off. */
	FUZZ_ASSERT(strchr(host, ':') == NULL || *addr == '[');
	FUZZ_ASSERT(strlen(host) < strlen(addr) || addr[0] == ':');
	free(host);
}

static void
fuzz_owner(const char *owner)
{
	const char	*p;

	if (!cluster_peer_owner_ok(owner))
		return;
	/* What goes into a header: no controls, no space, no high bytes. */
	FUZZ_ASSERT(*owner != '\0' && strlen(owner) < 256);
	for (p = owner; *p != '\0'; p++)
		FUZZ_ASSERT(*p > ' ' && *p <= '~');
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	*s = fuzz_text(data, size), *line[3] = { "", "", "" };
	char	*p = s, *nl;
	u_int	 i;

	for (i = 0; i < 3 && p != NULL; i++) {
		line[i] = p;
		if ((nl = strchr(p, '\n')) != NULL)
			*nl++ = '\0';
		p = nl;
	}
	fuzz_addr(line[0]);
	fuzz_owner(line[1]);
	if (cmd_cluster_id(line[2]))
		FUZZ_ASSERT(strchr(line[2], ':') == NULL &&
		    strchr(line[2], '/') == NULL);
	free(s);
	return (0);
}
