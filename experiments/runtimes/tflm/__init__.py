"""TensorFlow Lite Micro: the arena oracle (:mod:`.oracle`) and offline plans (:mod:`.offline`)."""
