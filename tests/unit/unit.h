/*
 * unit.h: the C unit tests' few macros.  A test is a function; RUN() calls
 * it and prints "ok NAME" or "FAIL NAME", which tests/run-units counts.
 */

#ifndef UNIT_H
#define UNIT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int	unit_failed_checks;
static int	unit_failed_tests;

#define CHECK(c) do {							\
	if (!(c)) {							\
		unit_failed_checks++;					\
		fprintf(stderr, "%s:%d: CHECK(%s) failed\n",		\
		    __FILE__, __LINE__, #c);				\
	}								\
} while (0)

#define CHECK_STR(a, b) do {						\
	const char *unit_a = (a), *unit_b = (b);			\
	if (unit_a == NULL || unit_b == NULL ||				\
	    strcmp(unit_a, unit_b) != 0) {				\
		unit_failed_checks++;					\
		fprintf(stderr, "%s:%d: \"%s\" != \"%s\"\n", __FILE__,	\
		    __LINE__, unit_a ? unit_a : "(null)",		\
		    unit_b ? unit_b : "(null)");			\
	}								\
} while (0)

#define RUN(fn) do {							\
	int unit_before = unit_failed_checks;				\
	fn();								\
	if (unit_failed_checks != unit_before) {			\
		unit_failed_tests++;					\
		printf("FAIL %s\n", #fn);				\
	} else								\
		printf("ok %s\n", #fn);					\
	fflush(stdout);							\
} while (0)

#define UNIT_EXIT() return (unit_failed_tests != 0)

#endif
