/* fuzz-audit.c: the parsers of nvidia-smi's and amd-smi's process lists. */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct audit_gpu_proc	*v;
	u_int			 n;
	char			*text, *cause = NULL;

	text = xmalloc(size + 1);
	memcpy(text, data, size);
	text[size] = '\0';
	if (audit_parse_nvidia(text, &v, &n, &cause) == 0)
		free(v);
	free(cause);
	cause = NULL;
	if (audit_parse_amdsmi(text, &v, &n, &cause) == 0)
		free(v);
	free(cause);
	free(text);
	return (0);
}
