/*
 * test-imageref.c: the image names a client may give (imageref.c): plain
 * references pass, options, transports and paths do not.
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "unit.h"

static int
ok(const char *image)
{
	char	*cause = NULL;
	int	 rc = imageref_check(image, &cause);

	if (rc != 0) {
		CHECK(cause != NULL && strncmp(cause, "image: '", 8) == 0);
		free(cause);
	}
	return (rc == 0);
}

static void
test_plain_references(void)
{
	CHECK(ok("busybox"));
	CHECK(ok("busybox:latest"));
	CHECK(ok("localhost/pytorch:24"));
	CHECK(ok("localhost/gmux-test-bb:d5ef708cece3"));
	CHECK(ok("registry.example:5000/a/b_c__d/e-f--g:v1.2_x"));
	CHECK(ok("quay.io/x/y@sha256:fa44919d6a05312c1d61a421eb308067bf94e0a2"
	    "b9d986881c4d1af46c95e53f"));
	CHECK(ok("fa44919d6a05312c1d61a421eb308067bf94e0a2b9d986881c4d1af46c9"
	    "5e53f"));
	CHECK(ok("localhost:5000/x"));
}

static void
test_not_references(void)
{
	char	 big[300];

	CHECK(!ok(""));
	CHECK(!ok("-v"));
	CHECK(!ok("--privileged"));
	CHECK(!ok("/etc"));
	CHECK(!ok("./img"));
	CHECK(!ok("dir:/etc"));
	CHECK(!ok("docker-archive:/tmp/x.tar"));
	CHECK(!ok("oci-archive:x.tar"));
	CHECK(!ok("oci:img"));
	CHECK(!ok("docker://busybox"));
	CHECK(!ok("containers-storage:x"));
	CHECK(!ok("localhost/../x"));
	CHECK(!ok("localhost/a/../../x"));
	CHECK(!ok("a..b"));
	CHECK(!ok("Busybox"));
	CHECK(!ok("localhost/no such"));
	CHECK(!ok("x/"));
	CHECK(!ok("x//y"));
	CHECK(!ok("x:"));
	CHECK(!ok("x:-tag"));
	CHECK(!ok("x@sha256:abc"));
	CHECK(!ok("x@md5:fa44919d6a05312c1d61a421eb308067"));
	CHECK(!ok("localhost:port/x"));
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	CHECK(!ok(big));
}

int
main(void)
{
	RUN(test_plain_references);
	RUN(test_not_references);
	UNIT_EXIT();
}
