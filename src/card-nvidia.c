/* card-nvidia.c: NVIDIA cards, from nvidia-smi.  (Parser lands with its fixtures.) */

#include "gmux.h"

int
card_nvidia_parse(const char *text, struct cards *cs, char **cause)
{
	xasprintf(cause, "not built yet");
	return (-1);
}

int
card_nvidia_detect(struct cards *cs, char **cause)
{
	return (0);
}
