/*
 * ratelimit.c: failed authentications per source.  A source that fails
 * max times within window ms is refused for block ms (429).  Pure: the
 * clock is passed in.  The table is bounded; when it is full the source
 * seen least recently is forgotten.  IPv6 sources are keyed by their /64,
 * since one host commonly holds a whole /64.
 */

#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <stdlib.h>
#include <string.h>

#include "gmux.h"

struct rlsource {
	char			*key;
	int64_t			 window_start;
	u_int			 fails;
	int64_t			 blocked_until;
	TAILQ_ENTRY(rlsource)	 entry;		/* least recently seen first */
};

struct ratelimit {
	u_int			 max;
	int64_t			 window;
	int64_t			 block;
	u_int			 capacity;
	struct hmap		*map;
	TAILQ_HEAD(, rlsource)	 lru;
};

/* Returns a limiter; free it with ratelimit_free. */
struct ratelimit *
ratelimit_create(u_int max, int64_t window_ms, int64_t block_ms,
    u_int capacity)
{
	struct ratelimit	*rl;

	rl = xcalloc(1, sizeof *rl);
	rl->max = max == 0 ? 1 : max;
	rl->window = window_ms;
	rl->block = block_ms;
	rl->capacity = capacity == 0 ? 1 : capacity;
	rl->map = hmap_create();
	TAILQ_INIT(&rl->lru);
	return (rl);
}

static void
ratelimit_drop(struct ratelimit *rl, struct rlsource *s)
{
	hmap_del(rl->map, s->key);
	TAILQ_REMOVE(&rl->lru, s, entry);
	free(s->key);
	free(s);
}

void
ratelimit_free(struct ratelimit *rl)
{
	struct rlsource	*s;

	if (rl == NULL)
		return;
	while ((s = TAILQ_FIRST(&rl->lru)) != NULL)
		ratelimit_drop(rl, s);
	hmap_free(rl->map);
	free(rl);
}

u_int
ratelimit_count(const struct ratelimit *rl)
{
	return ((u_int)hmap_count(rl->map));
}

/* Returns how many ms src is still refused for; 0 if it may try. */
int64_t
ratelimit_check(struct ratelimit *rl, const char *src, int64_t now)
{
	struct rlsource	*s;

	if ((s = hmap_get(rl->map, src)) == NULL || s->blocked_until <= now)
		return (0);
	return (s->blocked_until - now);
}

/* Counts one failure from src. */
void
ratelimit_fail(struct ratelimit *rl, const char *src, int64_t now)
{
	struct rlsource	*s;

	if ((s = hmap_get(rl->map, src)) == NULL) {
		if (hmap_count(rl->map) >= rl->capacity)
			ratelimit_drop(rl, TAILQ_FIRST(&rl->lru));
		s = xcalloc(1, sizeof *s);
		s->key = xstrdup(src);
		s->window_start = now;
		hmap_put(rl->map, s->key, s);
	} else
		TAILQ_REMOVE(&rl->lru, s, entry);
	TAILQ_INSERT_TAIL(&rl->lru, s, entry);
	if (now - s->window_start >= rl->window) {
		s->window_start = now;
		s->fails = 0;
	}
	if (++s->fails >= rl->max) {
		s->blocked_until = now + rl->block;
		s->window_start = now;
		s->fails = 0;
	}
}

/*
 * Writes the limiter's key for a numeric address into buf (at least
 * INET6_ADDRSTRLEN bytes): IPv4 as is, IPv6 as its /64 ("2001:db8::/64").
 * An IPv4-mapped IPv6 address counts as the IPv4 one.
 */
void
ratelimit_key(const char *addr, char *buf, size_t len)
{
	struct in6_addr	 a6;
	struct in_addr	 a4;
	char		 tmp[INET6_ADDRSTRLEN];

	snprintf(buf, len, "%s", addr);
	if (inet_pton(AF_INET6, addr, &a6) != 1)
		return;
	if (IN6_IS_ADDR_V4MAPPED(&a6)) {
		memcpy(&a4, &a6.s6_addr[12], sizeof a4);
		if (inet_ntop(AF_INET, &a4, tmp, sizeof tmp) != NULL)
			snprintf(buf, len, "%s", tmp);
		return;
	}
	memset(&a6.s6_addr[8], 0, 8);
	if (inet_ntop(AF_INET6, &a6, tmp, sizeof tmp) != NULL)
		snprintf(buf, len, "%s/64", tmp);
}
