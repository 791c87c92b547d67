/*
 * fuzz-ports.c: the listening sockets of /proc/net/tcp and tcp6 as
 * cluster-ports.c reads them: whatever the text, only gang ports are
 * marked, and the record's "ports_held" made of them reads back the same.
 * seeds: tests/fuzz/seeds/ports/
 */

#include "cluster-int.h"
#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	u_char	 held[CLUSTER_PORTS_BYTES], back[CLUSTER_PORTS_BYTES];
	json_t	*a = json_array();
	u_int	 port;

	memset(held, 0, sizeof held);
	cluster_ports_parse((const char *)data, size, held);
	FUZZ_ASSERT(!cluster_ports_has(held, CLUSTER_GANG_PORT - 1));
	FUZZ_ASSERT(!cluster_ports_has(held, CLUSTER_GANG_PORT +
	    CLUSTER_GANG_PORTS));
	for (port = CLUSTER_GANG_PORT; port < CLUSTER_GANG_PORT +
	    CLUSTER_GANG_PORTS; port++) {
		if (cluster_ports_has(held, port))
			json_array_append_new(a, json_integer(port));
	}
	cluster_ports_from_json(a, back);
	FUZZ_ASSERT(memcmp(held, back, sizeof held) == 0);
	json_decref(a);
	return (0);
}
