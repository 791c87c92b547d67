/* card-intel.c: Intel cards, from xpu-smi.  (Parser lands with its fixtures.) */

#include "gmux.h"

int
card_intel_parse(const char *text, struct cards *cs, char **cause)
{
	xasprintf(cause, "not built yet");
	return (-1);
}

int
card_intel_detect(struct cards *cs, char **cause)
{
	return (0);
}
