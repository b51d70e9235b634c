"""Parameter-server training: variables on ``ps`` tasks, work scheduled onto workers by a coordinator."""
