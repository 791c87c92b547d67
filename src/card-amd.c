/* card-amd.c: AMD cards, from amd-smi or rocm-smi.  (Parser lands with its fixtures.) */

#include "gmux.h"

int
card_amd_parse_amdsmi(const char *text, struct cards *cs, char **cause)
{
	xasprintf(cause, "not built yet");
	return (-1);
}

int
card_amd_parse_rocmsmi(const char *text, struct cards *cs, char **cause)
{
	xasprintf(cause, "not built yet");
	return (-1);
}

int
card_amd_detect(struct cards *cs, char **cause)
{
	return (0);
}
