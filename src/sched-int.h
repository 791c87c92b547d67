/*
 * sched-int.h: what the scheduler's files (sched*.c) share only
 * among themselves; gmux.h keeps what crosses families.  The units that
 * test these pieces include it too.
 */

#ifndef SCHED_INT_H
#define SCHED_INT_H

#include "gmux.h"

/* sched.c: pure scheduling policy; no I/O (the interface: top of sched.c) */
void		 sched_free(struct sched *);
void		 sched_set_age(struct sched *, int64_t);
void		 sched_walk(const struct sched *, sched_walk_cb, void *);
int		 sched_info(const struct sched *, u_int, struct sched_info *);
u_int		 sched_holder(const struct sched *, u_int);
u_int		 sched_ceiling(const struct sched *, u_int, u_int);
struct sched_decision *sched_emit(struct sched_out *, enum sched_act, u_int);

/* sched-queue.c: the queue, in order and in classes of equal requests */
int		 sched_queue_cmp(const struct sched_job *,
		     const struct sched_job *);
void		 sched_queue_insert(struct sched *, struct sched_job *);
void		 sched_queue_remove(struct sched *, struct sched_job *);
struct sched_job *sched_queue_head(const struct sched *);
u_int		 sched_queue_count(const struct sched *);
u_int		 sched_queue_list(const struct sched *, u_int *, u_int);
void		 sched_queue_free(struct sched *);
void		 sched_queue_enter(struct sched *, struct sched_job *);
void		 sched_queue_leave(struct sched *, struct sched_job *);

/* sched-card.c: room on the cards, placement, holds, ceilings */
u_int		 sched_card_free_seats(const struct sched_card *);
uint64_t	 sched_card_free_mem(const struct sched_card *);
uint64_t	 sched_card_need(const struct sched *, const struct sched_req *,
		     u_int);
uint64_t	 sched_card_eligible(const struct sched *,
		     const struct sched_req *);
u_int		 sched_card_fit(const struct sched *, const struct sched_req *,
		     uint64_t, uint64_t *);
uint64_t	 sched_card_place(const struct sched *,
		     const struct sched_req *, uint64_t, uint64_t);
uint64_t	 sched_card_avail(const struct sched *,
		     const struct sched_job *);
void		 sched_card_hold(struct sched *, struct sched_job *, uint64_t,
		     enum sched_hold);
void		 sched_card_release(struct sched *, struct sched_job *);
void		 sched_card_add(struct sched *, struct sched_job *);
void		 sched_card_remove(struct sched *, struct sched_job *);
void		 sched_card_ceilings(struct sched *, struct sched_out *, u_int);

/* sched-pass.c: the admission pass */
void		 sched_pass_run(struct sched *, int64_t, struct sched_out *);
void		 sched_pass_admit(struct sched *, struct sched_job *, uint64_t,
		     int64_t, struct sched_out *);

/* sched-preempt.c: making room by preemption */
int		 sched_preempt_for(struct sched *, struct sched_job *,
		     struct sched_out *);
void		 sched_preempt_round(struct sched *, struct sched_out *);
void		 sched_preempt_pool(struct sched *, struct sched_job *, int);

/* sched-explain.c: reasons, in words */
char		*sched_explain_req(const struct sched *,
		     const struct sched_req *, int64_t);
char		*sched_explain_need(const struct sched *,
		     const struct sched_req *, uint64_t);

#endif /* SCHED_INT_H */
