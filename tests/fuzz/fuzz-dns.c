/*
 * fuzz-dns: the fence's DNS stub, fed what a job could write to it.  An
 * answer must fit the room given and carry the query's ID.
 */

#include <sys/socket.h>

#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "fence-int.h"

int	LLVMFuzzerTestOneInput(const unsigned char *, size_t);

/* Every name has two addresses but "x.test", which does not exist. */
static int
lookup(const char *name, struct dns_rr *rr, u_int max, void *arg)
{
	if (strcmp(name, "x.test") == 0)
		return (DNS_NXDOMAIN);
	if (max < 2)
		return (DNS_SERVFAIL);
	memset(rr, 0, 2 * sizeof *rr);
	rr[0].family = AF_INET;
	rr[1].family = AF_INET6;
	return (2);
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static u_char		 out[65535];
	struct dns_question	 q;
	size_t			 room[] = { 12, 512, sizeof out }, n;
	char			*cause = NULL;
	u_int			 i;

	if (dns_parse_query(data, size, &q, &cause) != 0)
		free(cause);
	for (i = 0; i < nitems(room); i++) {
		n = dns_answer(data, size, out, room[i], lookup, NULL);
		if (n > room[i] || (n != 0 && (n < 12 ||
		    memcmp(out, data, 2) != 0)))
			abort();
	}
	return (0);
}
