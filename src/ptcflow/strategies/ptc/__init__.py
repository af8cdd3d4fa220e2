"""The PTC strategy: the SubAgent loop of one program per turn."""
