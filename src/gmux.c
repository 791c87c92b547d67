/* gmux.c: main(). */

#include "gmux.h"

int
main(int argc, char **argv)
{
	return (0);
}
