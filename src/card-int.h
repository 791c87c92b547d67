/*
 * card-int.h: what the card backends (card*.c) share only
 * among themselves; gmux.h keeps what crosses families.  The units that
 * test these pieces include it too.
 */

#ifndef CARD_INT_H
#define CARD_INT_H

#include "gmux.h"

/* card.c: what the host has */
int		 vendor_from_name(const char *, enum vendor *);
struct card	*cards_add(struct cards *);
void		 cards_truncate(struct cards *, u_int);
int		 card_room(const struct cards *, const char *, char **);
int		 card_parse_u64(const char *, uint64_t *);
int		 card_na(const char *);
int		 card_text_ok(const char *);
struct card_proc *card_procs_add(struct card_procs *);
void		 card_procs_truncate(struct card_procs *, u_int);
void		 card_procs_free(struct card_procs *);
struct card_usage *card_usages_add(struct card_usages *);
void		 card_usages_truncate(struct card_usages *, u_int);
void		 card_usages_free(struct card_usages *);

/* card-tool.c: running the vendors' tools */
typedef void	(*card_tool_cb)(char *, char *, void *);
int		 card_tool_output(char *const *, char **, char **);
int		 card_tool_cards(char *const *,
		     int (*)(const char *, struct cards *, char **),
		     struct cards *, char **);
int		 card_tool_start(char *const *, card_tool_cb, void *, char **);
void		 card_tool_timeout(int);

/* card-query.c: the processes on the cards and their use, while serving */
int		 cards_usage(const struct cards *, struct card_usages *,
		     char **);

/* card-nvidia.c */
int		 card_nvidia_parse(const char *, struct cards *, char **);
int		 card_nvidia_parse_apps(const char *, struct card_procs *,
		     char **);
int		 card_nvidia_parse_usage(const char *, struct card_usages *,
		     char **);
int		 card_nvidia_detect(struct cards *, char **);
char *const	*card_nvidia_argv(enum card_query);

/* card-amd.c */
int		 card_amd_parse_amdsmi(const char *, struct cards *, char **);
int		 card_amd_parse_amdsmi_list(const char *, struct cards *, u_int,
		     char **);
int		 card_amd_parse_rocmsmi(const char *, struct cards *, char **);
int		 card_amd_parse_procs(const char *, struct card_procs *,
		     char **);
int		 card_amd_parse_usage(const char *, struct card_usages *,
		     char **);
int		 card_amd_detect(struct cards *, char **);
char *const	*card_amd_argv(enum card_query);

/* card-intel.c */
int		 card_intel_parse(const char *, struct cards *, char **);
int		 card_intel_detect(struct cards *, char **);

/* card-json.c: the JSON that amd-smi, rocm-smi and xpu-smi print */
json_t		*card_json_load(const char *, char **);
json_t		*card_json_list(json_t *, char **);
json_t		*card_json_get(json_t *, const char *);
char		*card_json_text(json_t *, const char *);
int		 card_json_u64(json_t *, uint64_t *);
int		 card_json_bytes(json_t *, const char *, uint64_t *);
int		 card_json_index(json_t *, const char *, int *);

#endif /* CARD_INT_H */
