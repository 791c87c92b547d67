/*
 * fuzz-top.c: gmux top's frame from whatever JSON the daemon (or something
 * pretending to be it) sends; the first two bytes are the terminal's size.
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_error_t	 err;
	json_t		*j;
	char		*frame;
	size_t		 i, lines = 0;

	if (size < 2)
		return (0);
	if ((j = json_loadb((const char *)data + 2, size - 2, 0, &err)) == NULL)
		return (0);
	frame = top_render(j, j, data[0], data[1] % 64, 1793491200000LL);
	/* Never a control character, never more lines than asked. */
	for (i = 0; frame[i] != '\0'; i++) {
		if (frame[i] == '\n')
			lines++;
		else if ((unsigned char)frame[i] < 0x20 || frame[i] == 0x7f)
			abort();
	}
	if (data[1] % 64 != 0 && lines > data[1] % 64)
		abort();
	free(frame);
	json_decref(j);
	return (0);
}
